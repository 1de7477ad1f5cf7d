DROP INDEX IF EXISTS replay_requests_replay_run;
DROP INDEX IF EXISTS replay_requests_source_run;
DROP INDEX IF EXISTS job_checkpoints_run;
DROP INDEX IF EXISTS job_runs_resumed_from;
DROP INDEX IF EXISTS job_schedule_events_run;
DROP INDEX IF EXISTS job_schedule_events_job_created;
DROP INDEX IF EXISTS audit_log_created;
