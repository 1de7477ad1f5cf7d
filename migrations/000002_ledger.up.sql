-- Result ledger: one row per (job, generation, target, step), counters kept in the item transaction.

CREATE TABLE job_ledger (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_name        text        NOT NULL, -- no foreign keys: each costs a check per item on the hot path
    generation      bigint      NOT NULL,
    target_key      text        NOT NULL,
    step            text        NOT NULL DEFAULT '',
    state           text        NOT NULL CHECK (state IN ('IN_FLIGHT', 'CONFIRMED', 'TRANSIENT', 'VALIDATION_REJECTED',
                                    'CONFLICT', 'AMBIGUOUS_EFFECT', 'POLICY_BLOCKED', 'BUG_SUSPECTED', 'NOT_APPLIED', 'SKIPPED')),
    attempt         integer     NOT NULL DEFAULT 0,
    idempotency_key text        NOT NULL,
    input_hash      text        NOT NULL DEFAULT '',
    input_changed   boolean     NOT NULL DEFAULT false,
    external        boolean     NOT NULL DEFAULT false,
    effect_ref      text,
    evidence_ref    text,
    last_error      text,
    last_error_sig  text,
    same_error_count integer    NOT NULL DEFAULT 0,
    run_id          bigint      NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    UNIQUE (job_name, generation, target_key, step)
);

CREATE INDEX job_ledger_run ON job_ledger (run_id, id);
CREATE INDEX job_ledger_job_state ON job_ledger (job_name, state, id);
CREATE INDEX job_ledger_in_flight ON job_ledger (run_id) WHERE state = 'IN_FLIGHT';
CREATE INDEX job_ledger_ambiguous ON job_ledger (job_name, id) WHERE state = 'AMBIGUOUS_EFFECT';
-- Targets attempted 3+ times without success: the "one target retried" alarm.
CREATE INDEX job_ledger_retried ON job_ledger (job_name) WHERE attempt >= 3 AND state NOT IN ('CONFIRMED', 'NOT_APPLIED', 'SKIPPED');

-- Outcomes of external calls per job and minute, flushed by workers about once a second:
-- the downstream error rate of preflight, stop conditions and alarms, without scanning the ledger.
CREATE TABLE job_call_stats (
    job_name          text        NOT NULL,
    minute            timestamptz NOT NULL,
    calls             bigint      NOT NULL DEFAULT 0,
    downstream_errors bigint      NOT NULL DEFAULT 0,
    rejects           bigint      NOT NULL DEFAULT 0,
    PRIMARY KEY (job_name, minute)
);

-- Per-state counts per run and per generation, so no read path counts the ledger.
CREATE TABLE job_ledger_counts (
    job_name   text   NOT NULL,
    generation bigint NOT NULL,
    run_id     bigint NOT NULL DEFAULT 0, -- 0: the generation's total
    state      text   NOT NULL,
    n          bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (job_name, generation, run_id, state)
);

CREATE TABLE replay_requests (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_name         text        NOT NULL REFERENCES job_settings (name),
    source_run_id    bigint      NOT NULL REFERENCES job_runs (id),
    generation       bigint      NOT NULL,
    scope            text        NOT NULL,
    status           text        NOT NULL CHECK (status IN ('PENDING_APPROVAL', 'APPROVED', 'REJECTED', 'BLOCKED', 'EXECUTED')),
    preflight        jsonb       NOT NULL,
    reason           text        NOT NULL,
    compensation_ref text,
    requested_by     text        NOT NULL,
    decided_by       text,
    decision_note    text,
    replay_run_id    bigint REFERENCES job_runs (id),
    created_at       timestamptz NOT NULL DEFAULT now(),
    decided_at       timestamptz,
    executed_at      timestamptz
);

CREATE INDEX replay_requests_status ON replay_requests (status, id DESC);

CREATE TABLE audit_log (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    actor      text        NOT NULL,
    action     text        NOT NULL,
    target     text        NOT NULL,
    arguments  jsonb       NOT NULL DEFAULT '{}',
    outcome    text        NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);


