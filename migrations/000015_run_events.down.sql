DROP INDEX job_runs_started_at;
DROP INDEX job_runs_instance_id;
DROP INDEX job_runs_trigger_id;
DROP TABLE job_run_events;
