-- Run events: what happened to a run between its start and its end, for its timeline. The
-- start, the activation and the end are the run row's own columns; the events in between
-- (lease renewals, pause and cancel requests, stop-condition trips) are rows here, written in
-- the same statement as the change they record. See docs/adr/0014-run-events.md.
--
-- A renewal is one short row written by the renewal's own UPDATE (a CTE), at most one per half
-- lease: a run renewing a 30 s lease for a day writes about 5,800 rows. Rows go with their run
-- (ON DELETE CASCADE), so the runs' retention prunes them too.
CREATE TABLE job_run_events (
    id      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    run_id  bigint      NOT NULL REFERENCES job_runs (id) ON DELETE CASCADE,
    kind    text        NOT NULL CHECK (kind IN ('LEASE_RENEWED', 'PAUSE_REQUESTED', 'PAUSE_LIFTED',
        'CANCEL_REQUESTED', 'STOP_CONDITION_TRIPPED')),
    -- The shard the event concerns: NULL for the whole run (every run has one shard today).
    shard   text,
    actor   text        NOT NULL DEFAULT '',
    detail  text        NOT NULL DEFAULT '',
    at      timestamptz NOT NULL DEFAULT statement_timestamp()
);

-- A run's events in order, and its latest renewals without reading the others.
CREATE INDEX job_run_events_run ON job_run_events (run_id, id);
CREATE INDEX job_run_events_run_renewals ON job_run_events (run_id, id DESC) WHERE kind = 'LEASE_RENEWED';

-- The runs list across jobs: each filter reaches its rows through an index that also yields
-- the keyset order (id DESC); a time range becomes bounds on id, each one probe of (started_at).
CREATE INDEX job_runs_trigger_id ON job_runs (trigger, id DESC);
CREATE INDEX job_runs_instance_id ON job_runs (instance, id DESC);
CREATE INDEX job_runs_started_at ON job_runs (started_at);
