-- A reconcile of an AMBIGUOUS_EFFECT ledger entry, asked through the API and done by a worker:
-- the API inserts it PENDING and returns; a worker of any instance claims it (RUNNING, with a
-- lease token and lease_until by the database clock), asks the job's reconcile hook and ends
-- it DONE (the entry resolved) or FAILED (the entry stays AMBIGUOUS_EFFECT). A RUNNING request
-- whose lease ended (its holder died) goes back to PENDING, or to FAILED after its last attempt.
CREATE TABLE reconcile_requests (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    entry_id     bigint      NOT NULL, -- job_ledger.id; no foreign key, as the ledger has none
    job_name     text        NOT NULL,
    requested_by text        NOT NULL,
    status       text        NOT NULL DEFAULT 'PENDING' CHECK (status IN ('PENDING', 'RUNNING', 'DONE', 'FAILED')),
    result_state text        CHECK (result_state IN ('CONFIRMED', 'NOT_APPLIED')),
    message      text        NOT NULL DEFAULT '',
    attempt      integer     NOT NULL DEFAULT 0,
    instance     text,
    lease_token  text,
    lease_until  timestamptz,
    created_at   timestamptz NOT NULL DEFAULT statement_timestamp(),
    started_at   timestamptz,
    finished_at  timestamptz
);

-- One open reconcile per entry: a second request while one is pending is refused.
CREATE UNIQUE INDEX reconcile_requests_open_entry ON reconcile_requests (entry_id) WHERE status IN ('PENDING', 'RUNNING');
-- What a worker's poll reads: pending requests oldest first, and running ones by lease end.
CREATE INDEX reconcile_requests_pending ON reconcile_requests (id) WHERE status = 'PENDING';
CREATE INDEX reconcile_requests_running ON reconcile_requests (lease_until) WHERE status = 'RUNNING';
CREATE INDEX reconcile_requests_entry ON reconcile_requests (entry_id, id DESC);
