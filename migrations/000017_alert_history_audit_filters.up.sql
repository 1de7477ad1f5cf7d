-- Alarms keep their state in the database, so every instance shows the same acknowledgements,
-- silences and history. One row per episode: an alarm fires (a row opens), stays active
-- (last_seen_at moves), and resolves (resolved_at is set). The partial unique index lets any
-- number of instances record the same alarm at once and still open one episode.
CREATE TABLE alert_history (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    alert_key    text             NOT NULL,
    kind         text             NOT NULL,
    severity     text             NOT NULL,
    job_name     text             NOT NULL,
    run_id       bigint,
    target       text,
    message      text             NOT NULL,
    value        double precision NOT NULL,
    since        timestamptz      NOT NULL,
    fired_at     timestamptz      NOT NULL DEFAULT statement_timestamp(),
    last_seen_at timestamptz      NOT NULL DEFAULT statement_timestamp(),
    resolved_at  timestamptz,
    acked_by     text,
    acked_at     timestamptz
);

CREATE UNIQUE INDEX alert_history_open ON alert_history (alert_key) WHERE resolved_at IS NULL;
CREATE INDEX alert_history_job ON alert_history (job_name, id DESC);
CREATE INDEX alert_history_key ON alert_history (alert_key, id DESC);

-- A silence hides an alarm (by key, across its episodes) until a time by the database clock.
CREATE TABLE alert_silences (
    alert_key   text        PRIMARY KEY,
    until       timestamptz NOT NULL,
    silenced_by text        NOT NULL,
    reason      text        NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL DEFAULT statement_timestamp()
);

-- The audit log's filters each walk their own index in id order.
CREATE INDEX audit_log_actor ON audit_log (actor, id DESC);
CREATE INDEX audit_log_action ON audit_log (action, id DESC);
CREATE INDEX audit_log_target ON audit_log (target, id DESC);
CREATE INDEX audit_log_outcome ON audit_log (outcome, id DESC);
