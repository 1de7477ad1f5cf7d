-- Indexes for the read paths that walked a table instead of the rows they wanted.

-- ledger(jobName): one job's entries by keyset on id. Without it a job whose rows are all recent
-- is found by walking the primary key from the oldest row of every job.
CREATE INDEX job_ledger_job_id ON job_ledger (job_name, id);

-- The scheduler's pass reads the jobs whose next fire is still to be computed (after
-- registration, a schedule change or the end of maintenance). Manual jobs (no cron) never get a
-- next fire, so job_settings_next_fire alone would hand every one of them to every pass.
CREATE INDEX job_settings_unscheduled ON job_settings (name)
    WHERE next_scheduled_at IS NULL AND enabled AND NOT paused AND cron <> '';
