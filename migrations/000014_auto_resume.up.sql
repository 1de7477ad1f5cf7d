-- Auto-resume: a run that ended because its holder died (lease expired), its instance shut
-- down, or the database went away mid-run continues by itself with a RESUME run after a
-- backoff, up to a number of attempts. See docs/adr/0012-auto-resume.md.
--
-- The policy is the job's, edited at runtime like the cron. A run's end is judged in the same
-- statement that ends it (a trigger), so every path that ends a run (the worker's end, the
-- shutdown timer, the recoverer on any instance) decides alike and atomically: an instance that
-- dies right after ending a run cannot leave it neither resumed nor given up.

ALTER TABLE job_settings
    ADD COLUMN auto_resume                 boolean NOT NULL DEFAULT true,
    ADD COLUMN auto_resume_max_attempts    integer NOT NULL DEFAULT 3 CHECK (auto_resume_max_attempts BETWEEN 1 AND 100),
    ADD COLUMN auto_resume_backoff_seconds integer NOT NULL DEFAULT 5 CHECK (auto_resume_backoff_seconds BETWEEN 0 AND 86400),
    ADD COLUMN auto_resume_on              text[]  NOT NULL DEFAULT '{LEASE_EXPIRED,SHUTDOWN,DATABASE}'
        CHECK (auto_resume_on <@ '{LEASE_EXPIRED,SHUTDOWN,DATABASE}'::text[]);

-- attempt: how many automatic resumes came before this run in its chain (0 for a run an
-- operator, the schedule or a replay started). auto_resume_at: when this ended run is due to
-- be resumed. auto_resume_outcome: what became of that (RESUMED by auto_resume_run_id,
-- EXHAUSTED after the last attempt, SUPERSEDED by a later run of the job, OFF when the job's
-- policy does not cover how it ended).
ALTER TABLE job_runs
    ADD COLUMN attempt             integer NOT NULL DEFAULT 0,
    ADD COLUMN auto_resume_at      timestamptz,
    ADD COLUMN auto_resume_outcome text CHECK (auto_resume_outcome IN ('RESUMED', 'EXHAUSTED', 'SUPERSEDED', 'OFF')),
    ADD COLUMN auto_resume_run_id  bigint REFERENCES job_runs (id);

ALTER TABLE job_runs DROP CONSTRAINT job_runs_trigger_check;
ALTER TABLE job_runs ADD CONSTRAINT job_runs_trigger_check
    CHECK (trigger IN ('SCHEDULED', 'MANUAL', 'REPLAY', 'RECONCILE', 'AUTO_RESUME'));

-- The due auto-resumes, earliest first, without a scan.
CREATE INDEX job_runs_auto_resume_due ON job_runs (auto_resume_at)
    WHERE auto_resume_at IS NOT NULL AND auto_resume_outcome IS NULL;

CREATE FUNCTION baton_auto_resume() RETURNS trigger LANGUAGE plpgsql AS $$
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

CREATE TRIGGER job_runs_auto_resume BEFORE UPDATE OF status ON job_runs
    FOR EACH ROW
    WHEN (OLD.status IN ('STARTING', 'RUNNING') AND NEW.status = 'FAILED')
    EXECUTE FUNCTION baton_auto_resume();
