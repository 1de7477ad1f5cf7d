DROP INDEX IF EXISTS job_settings_unscheduled;
DROP INDEX IF EXISTS job_ledger_job_id;
