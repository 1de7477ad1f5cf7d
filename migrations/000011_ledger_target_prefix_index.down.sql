DROP INDEX IF EXISTS job_ledger_job_target_prefix;
