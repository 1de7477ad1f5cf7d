-- Retention deletes by age and deletes ended runs. Each index here lets a delete find its rows,
-- or lets the foreign-key check of a deleted run find what still refers to it, without walking
-- the referring table once per run.
CREATE INDEX audit_log_created ON audit_log (created_at);
CREATE INDEX job_schedule_events_job_created ON job_schedule_events (job_name, created_at);
CREATE INDEX job_schedule_events_run ON job_schedule_events (run_id) WHERE run_id IS NOT NULL;
CREATE INDEX job_runs_resumed_from ON job_runs (resumed_from) WHERE resumed_from IS NOT NULL;
CREATE INDEX job_checkpoints_run ON job_checkpoints (run_id);
CREATE INDEX replay_requests_source_run ON replay_requests (source_run_id);
CREATE INDEX replay_requests_replay_run ON replay_requests (replay_run_id) WHERE replay_run_id IS NOT NULL;
