ALTER TABLE replay_requests DROP COLUMN IF EXISTS target_keys;
DROP INDEX IF EXISTS job_run_errors_item_key;
