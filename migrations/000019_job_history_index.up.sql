-- A job's history (runs per status, durations, throughput, failures over a window) reads the
-- runs that ended in the window. Without this index it walks every run of the job from
-- job_runs_job_id and filters on finished_at. Active runs have no finished_at and stay out, so
-- the index is written once per run, at its end: counter updates of a running run stay HOT.
CREATE INDEX job_runs_job_finished ON job_runs (job_name, finished_at) WHERE finished_at IS NOT NULL;
