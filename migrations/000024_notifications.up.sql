-- Alarm notifications (docs/adr/0021-alert-notifications.md): channels an alarm is delivered to,
-- routes saying which alarms go to which channel, and the outbox of deliveries that every
-- instance works.

-- A channel is a receiver: a signed webhook, a Slack incoming webhook or a PagerDuty Events v2
-- endpoint. Its secret (the webhook's HMAC key, the Slack URL, the PagerDuty routing key) is
-- stored as "enc:v1:<base64 AES-GCM>" under the cluster's secret key, or as "env:NAME", a
-- reference to an environment variable of the delivering instance; never in the clear.
-- Deliveries to a channel start at rate_per_minute, at most burst at once (a token bucket kept
-- on the row: tokens as of tokens_at).
CREATE TABLE notification_channels (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name            text        NOT NULL UNIQUE CHECK (length(name) BETWEEN 1 AND 100),
    kind            text        NOT NULL CHECK (kind IN ('WEBHOOK', 'SLACK', 'PAGERDUTY')),
    url             text        NOT NULL DEFAULT '' CHECK (length(url) <= 2048),
    secret          text        NOT NULL DEFAULT '' CHECK (length(secret) <= 8192),
    rate_per_minute integer     NOT NULL DEFAULT 30 CHECK (rate_per_minute BETWEEN 1 AND 6000),
    burst           integer     NOT NULL DEFAULT 5 CHECK (burst BETWEEN 1 AND 1000),
    tokens          double precision NOT NULL DEFAULT 5,
    tokens_at       timestamptz NOT NULL DEFAULT statement_timestamp(),
    created_at      timestamptz NOT NULL DEFAULT statement_timestamp(),
    updated_at      timestamptz NOT NULL DEFAULT statement_timestamp(),
    updated_by      text        NOT NULL DEFAULT ''
);

-- A route sends the alarms of some kinds (empty: all), of some jobs (globs, empty: all) and of a
-- severity at least min_severity to a channel.
CREATE TABLE notification_routes (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    channel_id   bigint      NOT NULL REFERENCES notification_channels (id) ON DELETE CASCADE,
    kinds        text[]      NOT NULL DEFAULT '{}',
    jobs         text[]      NOT NULL DEFAULT '{}',
    min_severity text        NOT NULL DEFAULT 'WARNING' CHECK (min_severity IN ('WARNING', 'CRITICAL')),
    created_at   timestamptz NOT NULL DEFAULT statement_timestamp(),
    created_by   text        NOT NULL DEFAULT ''
);
CREATE INDEX notification_routes_channel ON notification_routes (channel_id);

-- baton_glob_like turns a job glob (* any run of characters, ? one) into a LIKE pattern.
CREATE FUNCTION baton_glob_like(glob text) RETURNS text LANGUAGE sql IMMUTABLE STRICT AS $$
    SELECT replace(replace(replace(replace(replace(glob, '\', '\\'), '%', '\%'), '_', '\_'), '*', '%'), '?', '_')
$$;

-- The outbox: one row per delivery. An episode's TRIGGER and RESOLVE rows are written in the
-- transaction that opens or resolves the episode, once per channel however many instances
-- record the alarm and however many routes match (the unique key). TEST rows have no episode.
-- A PENDING row is due at next_attempt_at; an instance claims it by moving next_attempt_at past
-- the delivery's timeout, so a row claimed by an instance that died is due again by itself.
CREATE TABLE notification_outbox (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    episode_id      bigint REFERENCES alert_history (id) ON DELETE CASCADE,
    channel_id      bigint      NOT NULL REFERENCES notification_channels (id) ON DELETE CASCADE,
    kind            text        NOT NULL CHECK (kind IN ('TRIGGER', 'RESOLVE', 'TEST')),
    alert_key       text        NOT NULL,
    payload         jsonb       NOT NULL,
    status          text        NOT NULL DEFAULT 'PENDING' CHECK (status IN ('PENDING', 'SENT', 'FAILED')),
    attempts        integer     NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT statement_timestamp(),
    last_error      text,
    created_at      timestamptz NOT NULL DEFAULT statement_timestamp(),
    sent_at         timestamptz,
    UNIQUE (episode_id, channel_id, kind)
);
CREATE INDEX notification_outbox_due ON notification_outbox (channel_id, next_attempt_at) WHERE status = 'PENDING';
CREATE INDEX notification_outbox_recent ON notification_outbox (id DESC);
