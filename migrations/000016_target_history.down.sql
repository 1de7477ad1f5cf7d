DROP INDEX IF EXISTS job_run_errors_item_key;
