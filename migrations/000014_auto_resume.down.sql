DROP TRIGGER job_runs_auto_resume ON job_runs;
DROP FUNCTION baton_auto_resume();
DROP INDEX job_runs_auto_resume_due;
UPDATE job_runs SET trigger = 'MANUAL' WHERE trigger = 'AUTO_RESUME';
ALTER TABLE job_runs DROP CONSTRAINT job_runs_trigger_check;
ALTER TABLE job_runs ADD CONSTRAINT job_runs_trigger_check
    CHECK (trigger IN ('SCHEDULED', 'MANUAL', 'REPLAY', 'RECONCILE'));
ALTER TABLE job_runs
    DROP COLUMN auto_resume_run_id,
    DROP COLUMN auto_resume_outcome,
    DROP COLUMN auto_resume_at,
    DROP COLUMN attempt;
ALTER TABLE job_settings
    DROP COLUMN auto_resume_on,
    DROP COLUMN auto_resume_backoff_seconds,
    DROP COLUMN auto_resume_max_attempts,
    DROP COLUMN auto_resume;
