DROP INDEX IF EXISTS job_runs_job_finished;
