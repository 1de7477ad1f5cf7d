DROP TRIGGER job_runs_settle_shards ON job_runs;
DROP FUNCTION baton_settle_shards();
DROP FUNCTION baton_settle_run(bigint);
DROP FUNCTION baton_run_pause_reason(bigint);
DROP FUNCTION baton_run_cancel_requested(bigint);
DROP TABLE job_run_call_seconds;
-- Shards and their rows go; their runs stay.
DELETE FROM job_run_events WHERE kind IN ('SHARD_CLAIMED', 'SHARD_REQUEUED');
DELETE FROM job_runs WHERE parent_run_id IS NOT NULL;
ALTER TABLE job_run_events DROP CONSTRAINT job_run_events_kind_check;
ALTER TABLE job_run_events ADD CONSTRAINT job_run_events_kind_check
    CHECK (kind IN ('LEASE_RENEWED', 'PAUSE_REQUESTED', 'PAUSE_LIFTED', 'CANCEL_REQUESTED', 'STOP_CONDITION_TRIPPED'));
DELETE FROM job_checkpoints WHERE shard_index IS NOT NULL;
ALTER TABLE job_checkpoints DROP COLUMN done, DROP COLUMN shard_spec, DROP COLUMN shard_index;
ALTER TABLE job_settings DROP COLUMN max_concurrent_shards;
DROP INDEX job_runs_sharded_active;
DROP INDEX job_runs_pending_shards;
DROP INDEX job_runs_shard_keys;
DROP INDEX job_runs_shards;
DROP INDEX job_runs_one_active;
CREATE UNIQUE INDEX job_runs_one_active ON job_runs (job_name) WHERE status IN ('STARTING', 'RUNNING');
ALTER TABLE job_runs DROP CONSTRAINT job_runs_status_check;
ALTER TABLE job_runs ADD CONSTRAINT job_runs_status_check
    CHECK (status IN ('STARTING', 'RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELLED', 'PAUSED'));
ALTER TABLE job_runs DROP CONSTRAINT job_runs_shard_shape;
ALTER TABLE job_runs
    DROP COLUMN shard_total,
    DROP COLUMN shard_spec,
    DROP COLUMN shard_index,
    DROP COLUMN shard_key,
    DROP COLUMN parent_run_id;

CREATE OR REPLACE FUNCTION baton_auto_resume() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    cause  text;
    p      record;
    delay  double precision;
BEGIN
    -- Replays and reconciles are re-run through their request, not resumed.
    IF NEW.trigger IN ('REPLAY', 'RECONCILE') THEN
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
