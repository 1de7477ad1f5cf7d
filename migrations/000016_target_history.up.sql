-- A target's history across runs: its error rows by item key, newest ids last, so that the
-- target page reads them by keyset without a scan of every run's errors.
CREATE INDEX job_run_errors_item_key ON job_run_errors (item_key, id);

-- A replay of selected targets: the targets it retries (NULL: every target of its scope).
ALTER TABLE replay_requests ADD COLUMN target_keys text[];
