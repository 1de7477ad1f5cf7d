-- Downstreams are the outside systems jobs call, with the limits their calls start under,
-- cluster-wide (docs/adr/0018-downstream-limits.md). A row is made from the code's defaults the
-- first time a job declaring the downstream registers; from then on operators change it. NULL
-- sets no limit of its kind. Every instance reads the table twice a second and applies a new
-- version at once.
CREATE TABLE downstreams (
    name            text PRIMARY KEY CHECK (length(name) BETWEEN 1 AND 100),
    rate_per_second double precision CHECK (rate_per_second > 0),
    burst           integer CHECK (burst > 0),
    concurrency     integer CHECK (concurrency > 0),
    quota           bigint CHECK (quota > 0),
    quota_window    text NOT NULL DEFAULT 'HOUR' CHECK (quota_window IN ('HOUR', 'DAY')),
    paused          boolean NOT NULL DEFAULT false,
    defaults        jsonb NOT NULL DEFAULT '{}',
    version         bigint NOT NULL DEFAULT 1,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    updated_by      text NOT NULL DEFAULT ''
);

-- The instances alive now, by their heartbeat: the divisor of a downstream's local share when
-- Redis is unreachable, and which of them limit on that share (degraded_since).
CREATE TABLE runner_instances (
    instance       text PRIMARY KEY,
    started_at     timestamptz NOT NULL DEFAULT now(),
    heartbeat_at   timestamptz NOT NULL DEFAULT now(),
    degraded_since timestamptz
);
