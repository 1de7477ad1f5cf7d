-- Runner core: job settings, runs, errors, checkpoints, schedule events and cluster state.

CREATE TABLE job_settings (
    name               text PRIMARY KEY,
    description        text        NOT NULL DEFAULT '',
    cron               text        NOT NULL DEFAULT '',
    timezone           text        NOT NULL DEFAULT 'UTC',
    enabled            boolean     NOT NULL DEFAULT true,
    paused             boolean     NOT NULL DEFAULT false,
    next_scheduled_at  timestamptz,
    risk_level         text        NOT NULL DEFAULT 'LOW' CHECK (risk_level IN ('LOW', 'MEDIUM', 'HIGH')),
    lease_seconds      integer     CHECK (lease_seconds IS NULL OR lease_seconds BETWEEN 1 AND 86400),
    retention_days     integer     NOT NULL DEFAULT 90 CHECK (retention_days > 0),
    job_version        text        NOT NULL DEFAULT '',
    current_generation bigint      NOT NULL DEFAULT 1,
    version            bigint      NOT NULL DEFAULT 1,
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now(),
    updated_by         text        NOT NULL DEFAULT 'system'
);

CREATE INDEX job_settings_next_fire ON job_settings (next_scheduled_at) WHERE enabled AND NOT paused;

CREATE TABLE job_runs (
    id                 bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_name           text        NOT NULL REFERENCES job_settings (name),
    status             text        NOT NULL CHECK (status IN ('STARTING', 'RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELLED', 'PAUSED')),
    trigger            text        NOT NULL CHECK (trigger IN ('SCHEDULED', 'MANUAL', 'REPLAY', 'RECONCILE')),
    mode               text        NOT NULL CHECK (mode IN ('RESUME', 'RESTART')),
    requested_by       text        NOT NULL,
    instance           text        NOT NULL,
    lease_token        text        NOT NULL,
    lease_seconds      integer     NOT NULL,
    lease_until        timestamptz NOT NULL,
    heartbeat_at       timestamptz NOT NULL DEFAULT now(),
    cancel_requested   boolean     NOT NULL DEFAULT false,
    cancel_requested_by text,
    cancel_requested_at timestamptz,
    pause_reason       text CHECK (pause_reason IN ('PAUSED', 'MAINTENANCE')),
    generation         bigint      NOT NULL,
    generation_started_at timestamptz NOT NULL DEFAULT now(),
    resumed_from       bigint REFERENCES job_runs (id),
    replay_request_id  bigint,
    scheduled_for      timestamptz,
    checkpoint         text        NOT NULL DEFAULT '',
    start_checkpoint   text        NOT NULL DEFAULT '',
    total              bigint,
    processed          bigint      NOT NULL DEFAULT 0,
    succeeded          bigint      NOT NULL DEFAULT 0,
    failed             bigint      NOT NULL DEFAULT 0,
    skipped            bigint      NOT NULL DEFAULT 0,
    ambiguous          bigint      NOT NULL DEFAULT 0,
    job_version        text        NOT NULL DEFAULT '',
    worker_version     text        NOT NULL DEFAULT '',
    stop_reason        text,
    message            text        NOT NULL DEFAULT '',
    started_at         timestamptz NOT NULL DEFAULT now(),
    activated_at       timestamptz,
    finished_at        timestamptz,
    last_progress_at   timestamptz NOT NULL DEFAULT now(),
    last_checkpoint_at timestamptz NOT NULL DEFAULT now(),
    stop_detail        jsonb
);

-- Invariant 1: at most one active run per job, whatever Redis says.
CREATE UNIQUE INDEX job_runs_one_active ON job_runs (job_name) WHERE status IN ('STARTING', 'RUNNING');
CREATE INDEX job_runs_job_id ON job_runs (job_name, id DESC);
-- RESUME finds the generation's first run (its start date) and last run without a scan.
CREATE INDEX job_runs_job_generation ON job_runs (job_name, generation, id);
CREATE INDEX job_runs_status_id ON job_runs (status, id DESC);
CREATE INDEX job_runs_active_lease ON job_runs (lease_until) WHERE status IN ('STARTING', 'RUNNING');

CREATE TABLE job_run_errors (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    run_id        bigint      NOT NULL REFERENCES job_runs (id) ON DELETE CASCADE,
    item_key      text        NOT NULL,
    failure_class text        NOT NULL,
    message       text        NOT NULL,
    attempt       integer     NOT NULL DEFAULT 1,
    created_at    timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX job_run_errors_run ON job_run_errors (run_id, id);

CREATE TABLE job_checkpoints (
    job_name   text        NOT NULL REFERENCES job_settings (name),
    generation bigint      NOT NULL,
    shard      text        NOT NULL DEFAULT '',
    token      text        NOT NULL,
    processed  bigint      NOT NULL DEFAULT 0,
    run_id     bigint      NOT NULL REFERENCES job_runs (id),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (job_name, generation, shard)
);

-- Scheduled fires that did not start a run (the job was running, paused, or the cluster was in maintenance).
CREATE TABLE job_schedule_events (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_name      text        NOT NULL REFERENCES job_settings (name),
    scheduled_for timestamptz NOT NULL,
    outcome       text        NOT NULL,
    run_id        bigint REFERENCES job_runs (id),
    instance      text        NOT NULL,
    detail        text        NOT NULL DEFAULT '',
    created_at    timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX job_schedule_events_job ON job_schedule_events (job_name, id DESC);

-- One row: cluster-wide switches.
CREATE TABLE cluster_state (
    id          boolean PRIMARY KEY DEFAULT true CHECK (id),
    maintenance boolean     NOT NULL DEFAULT false,
    updated_at  timestamptz NOT NULL DEFAULT now(),
    updated_by  text        NOT NULL DEFAULT 'system'
);

INSERT INTO cluster_state (id) VALUES (true);
