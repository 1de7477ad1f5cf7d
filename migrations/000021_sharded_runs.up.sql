-- Sharded runs: one run (the parent) worked by every instance of the cluster, one shard at a
-- time per worker slot. See docs/adr/0019-sharded-runs.md.
--
-- A shard is a job_runs row of its own whose parent_run_id names the run: it has its own lease
-- token, fence, checkpoint, counters and status, so every fenced statement of a run (items,
-- renewals, the end, the recoverer) works on a shard unchanged, and a stale holder of one shard
-- can write nothing while the others go on. Shards are PENDING until an instance with a free
-- slot claims one. The parent is what operators start, cancel, pause, replay and watch; once its
-- shards are planned (shard_total) it holds no lease of its own: it ends when its last shard
-- ends, in that shard's transaction (baton_settle_run).

ALTER TABLE job_runs
    ADD COLUMN parent_run_id bigint REFERENCES job_runs (id) ON DELETE CASCADE,
    ADD COLUMN shard_key     text,
    ADD COLUMN shard_index   integer,
    ADD COLUMN shard_spec    text NOT NULL DEFAULT '',
    -- A parent's number of shards, once planned; NULL for a run that is not sharded (or not yet).
    ADD COLUMN shard_total   integer,
    ADD CONSTRAINT job_runs_shard_shape CHECK (
        (parent_run_id IS NULL) = (shard_key IS NULL) AND (parent_run_id IS NULL) = (shard_index IS NULL)
        AND (parent_run_id IS NULL OR shard_total IS NULL));

ALTER TABLE job_runs DROP CONSTRAINT job_runs_status_check;
ALTER TABLE job_runs ADD CONSTRAINT job_runs_status_check
    CHECK (status IN ('PENDING', 'STARTING', 'RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELLED', 'PAUSED')
        AND (status <> 'PENDING' OR parent_run_id IS NOT NULL));

-- Invariant 1 holds for runs; a run's shards are active together.
DROP INDEX job_runs_one_active;
CREATE UNIQUE INDEX job_runs_one_active ON job_runs (job_name)
    WHERE status IN ('STARTING', 'RUNNING') AND parent_run_id IS NULL;
-- A run's shards in order, each key once.
CREATE UNIQUE INDEX job_runs_shards ON job_runs (parent_run_id, shard_index) WHERE parent_run_id IS NOT NULL;
CREATE UNIQUE INDEX job_runs_shard_keys ON job_runs (parent_run_id, shard_key) WHERE parent_run_id IS NOT NULL;
-- The shards waiting for a slot, for the claim and for the instances' heartbeat.
CREATE INDEX job_runs_pending_shards ON job_runs (id) WHERE status = 'PENDING';
-- The sharded runs still going, for the recoverer's sweep.
CREATE INDEX job_runs_sharded_active ON job_runs (id) WHERE shard_total IS NOT NULL AND status IN ('STARTING', 'RUNNING');

-- How many shards of one run any instances work at once; 0: as many as there are free slots.
ALTER TABLE job_settings
    ADD COLUMN max_concurrent_shards integer NOT NULL DEFAULT 0 CHECK (max_concurrent_shards BETWEEN 0 AND 10000);

-- A generation's shard plan: one checkpoint row per shard, written when a run opens the plan and
-- read by every later run of the generation (RESUME, REPLAY), so each shard resumes from its own
-- checkpoint. done: the shard finished in the generation (a RESUME does not walk it again).
ALTER TABLE job_checkpoints
    ADD COLUMN shard_index integer,
    ADD COLUMN shard_spec  text    NOT NULL DEFAULT '',
    ADD COLUMN done        boolean NOT NULL DEFAULT false;

ALTER TABLE job_run_events DROP CONSTRAINT job_run_events_kind_check;
ALTER TABLE job_run_events ADD CONSTRAINT job_run_events_kind_check
    CHECK (kind IN ('LEASE_RENEWED', 'PAUSE_REQUESTED', 'PAUSE_LIFTED', 'CANCEL_REQUESTED', 'STOP_CONDITION_TRIPPED',
        'SHARD_CLAIMED', 'SHARD_REQUEUED'));

-- A sharded run's call outcomes per second of the database clock, summed over its shards: the
-- stop conditions of every shard judge the whole run's window from here. Rows go with the run.
CREATE TABLE job_run_call_seconds (
    run_id     bigint      NOT NULL REFERENCES job_runs (id) ON DELETE CASCADE,
    second     timestamptz NOT NULL,
    calls      bigint      NOT NULL DEFAULT 0,
    external   bigint      NOT NULL DEFAULT 0,
    downstream bigint      NOT NULL DEFAULT 0,
    rejects    bigint      NOT NULL DEFAULT 0,
    PRIMARY KEY (run_id, second)
);

-- A shard stops when its run is asked to: every fenced write of a shard returns its run's
-- cancel flag and pause reason, read through these (a run's own flags are on its row).
CREATE FUNCTION baton_run_cancel_requested(run bigint) RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT cancel_requested FROM job_runs WHERE id = run
$$;
CREATE FUNCTION baton_run_pause_reason(run bigint) RETURNS text LANGUAGE sql STABLE AS $$
    SELECT pause_reason FROM job_runs WHERE id = run
$$;

-- The end of a run's ending, shards included. A shard's holder that died, shut down or lost its
-- database is resumed in place: the shard goes back to PENDING, due after the job's backoff,
-- for any instance to claim and continue from its own checkpoint (a shutdown hands it back at
-- once and costs no attempt). A sharded parent is never resumed as a whole: its shards resumed
-- themselves. Everything else is as migration 14 made it.
CREATE OR REPLACE FUNCTION baton_auto_resume() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    cause  text;
    p      record;
    par    record;
    delay  double precision;
BEGIN
    IF NEW.shard_total IS NOT NULL THEN
        RETURN NEW;
    END IF;
    -- Replays and reconciles are re-run through their request, not resumed; a replay's shard is
    -- part of the replay, and resumes like any shard.
    IF NEW.trigger IN ('REPLAY', 'RECONCILE') AND NEW.parent_run_id IS NULL THEN
        RETURN NEW;
    END IF;
    cause := CASE NEW.stop_reason
        WHEN 'LEASE_EXPIRED' THEN 'LEASE_EXPIRED'
        WHEN 'SHUTDOWN' THEN 'SHUTDOWN'
        WHEN 'SHUTDOWN_TIMEOUT' THEN 'SHUTDOWN'
        WHEN 'DATABASE_UNAVAILABLE' THEN 'DATABASE'
    END;
    IF cause IS NULL THEN
        RETURN NEW;
    END IF;
    SELECT auto_resume, auto_resume_max_attempts, auto_resume_backoff_seconds, auto_resume_on
        INTO p FROM job_settings WHERE name = NEW.job_name;
    IF NEW.parent_run_id IS NOT NULL THEN
        -- Read without a lock (shards lock before their run, never after): a run that starts
        -- stopping after this read finds the shard PENDING, and ends it (the recoverer's sweep
        -- makes sure of it).
        SELECT status, cancel_requested, pause_reason INTO par FROM job_runs WHERE id = NEW.parent_run_id;
        IF par.status NOT IN ('STARTING', 'RUNNING') OR par.cancel_requested OR par.pause_reason IS NOT NULL THEN
            RETURN NEW;
        END IF;
        IF NOT p.auto_resume OR NOT (cause = ANY (p.auto_resume_on)) THEN
            NEW.auto_resume_outcome := 'OFF';
            RETURN NEW;
        END IF;
        IF cause = 'SHUTDOWN' THEN
            delay := 0;
        ELSIF NEW.attempt >= p.auto_resume_max_attempts THEN
            NEW.auto_resume_outcome := 'EXHAUSTED';
            RETURN NEW;
        ELSE
            delay := least(p.auto_resume_backoff_seconds * power(2, NEW.attempt), greatest(p.auto_resume_backoff_seconds, 900));
            NEW.attempt := NEW.attempt + 1;
        END IF;
        NEW.status := 'PENDING';
        NEW.auto_resume_at := statement_timestamp() + make_interval(secs => delay);
        INSERT INTO job_run_events (run_id, kind, shard, detail)
        VALUES (NEW.id, 'SHARD_REQUEUED', NEW.shard_key, left(NEW.message, 2000));
        RETURN NEW;
    END IF;
    IF NOT p.auto_resume OR NOT (cause = ANY (p.auto_resume_on)) THEN
        NEW.auto_resume_outcome := 'OFF';
    ELSIF NEW.attempt >= p.auto_resume_max_attempts THEN
        NEW.auto_resume_outcome := 'EXHAUSTED';
    ELSE
        -- The backoff doubles with each attempt, capped at 15 minutes (or the backoff itself
        -- when that is longer).
        delay := least(p.auto_resume_backoff_seconds * power(2, NEW.attempt), greatest(p.auto_resume_backoff_seconds, 900));
        NEW.auto_resume_at := statement_timestamp() + make_interval(secs => delay);
        -- Wakes every scheduler (at commit), which then sleeps until the resume is due.
        PERFORM pg_notify('baton_schedule', NEW.job_name);
    END IF;
    RETURN NEW;
END;
$$;

-- baton_settle_run ends a sharded run once none of its shards is left to work (PENDING,
-- STARTING or RUNNING; a run asked to stop first ends its PENDING ones): SUCCEEDED when every shard did, otherwise the status of its worst shard
-- (FAILED, then CANCELLED, then PAUSED) with that shard's reason; its counters become the sums
-- of its shards'. The run's row is locked first, so of two shards ending at once the second
-- waits and then sees the first ended: exactly one of them ends the run. Nothing happens to a
-- run that has open shards or has already ended. It returns whether it ended the run.
CREATE FUNCTION baton_settle_run(parent bigint) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    p record;
    a record;
    w record;
    msg text;
BEGIN
    -- FOR NO KEY UPDATE, not FOR UPDATE: the transaction that ends a shard has already taken
    -- FOR KEY SHARE on the run's row (the foreign keys of the checkpoint and call statistics it
    -- writes name the run), as has every other shard ending at the same moment, and FOR UPDATE
    -- would wait for each of them while they wait for it: a deadlock. NO KEY UPDATE leaves key
    -- share alone and still lets one settle through at a time.
    SELECT id, status, shard_total, cancel_requested, pause_reason INTO p FROM job_runs WHERE id = parent FOR NO KEY UPDATE;
    IF NOT FOUND OR p.status NOT IN ('STARTING', 'RUNNING') OR p.shard_total IS NULL THEN
        RETURN false;
    END IF;
    -- A run asked to stop ends its shards no instance holds: they would never be claimed.
    IF p.cancel_requested OR p.pause_reason IS NOT NULL THEN
        UPDATE job_runs SET
            status = CASE WHEN p.cancel_requested THEN 'CANCELLED' ELSE 'PAUSED' END,
            stop_reason = CASE WHEN p.cancel_requested THEN 'CANCELLED' ELSE p.pause_reason END,
            message = CASE WHEN p.cancel_requested THEN 'cancelled before an instance claimed it'
                ELSE 'paused before an instance claimed it; resume continues from its checkpoint' END,
            finished_at = clock_timestamp(), auto_resume_at = NULL
        WHERE parent_run_id = parent AND status = 'PENDING';
    END IF;
    IF EXISTS (SELECT 1 FROM job_runs WHERE parent_run_id = parent AND status IN ('PENDING', 'STARTING', 'RUNNING')) THEN
        RETURN false;
    END IF;
    SELECT count(*) AS n, count(*) FILTER (WHERE status = 'SUCCEEDED') AS ok,
        count(*) FILTER (WHERE status = 'FAILED') AS failed_n, count(*) FILTER (WHERE status = 'CANCELLED') AS cancelled_n,
        count(*) FILTER (WHERE status = 'PAUSED') AS paused_n,
        COALESCE(sum(processed), 0) AS processed, COALESCE(sum(succeeded), 0) AS succeeded, COALESCE(sum(failed), 0) AS failed,
        COALESCE(sum(skipped), 0) AS skipped, COALESCE(sum(ambiguous), 0) AS ambiguous,
        sum(total) AS total, max(heartbeat_at) AS heartbeat_at, max(last_progress_at) AS last_progress_at,
        max(last_checkpoint_at) AS last_checkpoint_at,
        bool_or(auto_resume_outcome = 'EXHAUSTED') AS exhausted
        INTO a FROM job_runs WHERE parent_run_id = parent;
    SELECT status, stop_reason, message, shard_key INTO w FROM job_runs
        WHERE parent_run_id = parent AND status <> 'SUCCEEDED'
        ORDER BY CASE status WHEN 'FAILED' THEN 0 WHEN 'CANCELLED' THEN 1 ELSE 2 END, shard_index
        LIMIT 1;
    IF w.status IS NULL THEN
        msg := '';
    ELSE
        msg := left(format('%s of %s shards succeeded, %s failed, %s cancelled, %s paused; shard %s: %s',
            a.ok, a.n, a.failed_n, a.cancelled_n, a.paused_n, w.shard_key, w.message), 2000);
    END IF;
    UPDATE job_runs SET status = COALESCE(w.status, 'SUCCEEDED'), stop_reason = w.stop_reason, message = msg,
        finished_at = clock_timestamp(), lease_until = LEAST(lease_until, clock_timestamp()), pause_reason = NULL,
        processed = a.processed, succeeded = a.succeeded, failed = a.failed, skipped = a.skipped, ambiguous = a.ambiguous,
        total = COALESCE(a.total, total), heartbeat_at = GREATEST(heartbeat_at, a.heartbeat_at),
        last_progress_at = GREATEST(last_progress_at, a.last_progress_at),
        last_checkpoint_at = GREATEST(last_checkpoint_at, a.last_checkpoint_at),
        auto_resume_outcome = CASE WHEN a.exhausted THEN 'EXHAUSTED' END
    WHERE id = parent;
    DELETE FROM job_run_call_seconds WHERE run_id = parent;
    RETURN true;
END;
$$;

CREATE FUNCTION baton_settle_shards() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM baton_settle_run(NEW.parent_run_id);
    RETURN NULL;
END;
$$;

-- Deferred to the commit, so the run is settled after every statement of the transaction that
-- ended the shard (its intents quarantined, its counters final), and each path that ends a
-- shard — its holder, the shutdown timer, the recoverer, a cancel or a pause of the run —
-- settles the run alike.
CREATE CONSTRAINT TRIGGER job_runs_settle_shards AFTER UPDATE OF status ON job_runs
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW
    WHEN (NEW.parent_run_id IS NOT NULL AND NEW.status IN ('SUCCEEDED', 'FAILED', 'CANCELLED', 'PAUSED'))
    EXECUTE FUNCTION baton_settle_shards();
