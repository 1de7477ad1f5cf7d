-- A target's history across runs: its error rows by item key, newest ids last, so that the
-- target page reads them by keyset without a scan of every run's errors.
CREATE INDEX job_run_errors_item_key ON job_run_errors (item_key, id);
