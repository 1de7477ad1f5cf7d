DROP TABLE IF EXISTS cluster_state;
DROP TABLE IF EXISTS job_schedule_events;
DROP TABLE IF EXISTS job_checkpoints;
DROP TABLE IF EXISTS job_run_errors;
DROP TABLE IF EXISTS job_runs;
DROP TABLE IF EXISTS job_settings;
