-- The instants taken from duplicate runs of a fire by the up migration are not restored.
DROP INDEX IF EXISTS job_runs_one_per_fire;
