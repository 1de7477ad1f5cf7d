ALTER TABLE job_runs DROP COLUMN trace_parent;
