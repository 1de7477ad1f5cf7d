DROP TRIGGER IF EXISTS job_runs_shard_requeue_counts ON job_runs;
DROP FUNCTION IF EXISTS baton_shard_requeue_counts();
ALTER TABLE job_runs
    DROP COLUMN IF EXISTS checkpoint_processed,
    DROP COLUMN IF EXISTS checkpoint_succeeded,
    DROP COLUMN IF EXISTS checkpoint_failed,
    DROP COLUMN IF EXISTS checkpoint_skipped,
    DROP COLUMN IF EXISTS checkpoint_ambiguous;
