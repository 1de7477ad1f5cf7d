-- A shard counts each of its targets once, whichever of its holders met it (docs/adr/0019).
--
-- A shard's row lives on through its requeues, and its next holder starts again from the
-- shard's checkpoint: it meets again every target the dead holder met after that checkpoint
-- (an intent the recoverer quarantined, a batch's outcomes committed while it waited out a
-- retry's backoff). So the row keeps the counters as they stood at its last checkpoint, and a
-- shard made PENDING again goes back to them: the next holder counts every target after the
-- checkpoint, once, as it meets it.
ALTER TABLE job_runs
    ADD COLUMN checkpoint_processed bigint NOT NULL DEFAULT 0,
    ADD COLUMN checkpoint_succeeded bigint NOT NULL DEFAULT 0,
    ADD COLUMN checkpoint_failed    bigint NOT NULL DEFAULT 0,
    ADD COLUMN checkpoint_skipped   bigint NOT NULL DEFAULT 0,
    ADD COLUMN checkpoint_ambiguous bigint NOT NULL DEFAULT 0;

-- Runs after job_runs_auto_resume (triggers of one event fire in name order), which is what
-- makes a shard PENDING again.
CREATE FUNCTION baton_shard_requeue_counts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.parent_run_id IS NOT NULL AND NEW.status = 'PENDING' AND OLD.status <> 'PENDING' THEN
        NEW.processed := NEW.checkpoint_processed;
        NEW.succeeded := NEW.checkpoint_succeeded;
        NEW.failed := NEW.checkpoint_failed;
        NEW.skipped := NEW.checkpoint_skipped;
        NEW.ambiguous := NEW.checkpoint_ambiguous;
    END IF;
    RETURN NEW;
END;
$$;

CREATE TRIGGER job_runs_shard_requeue_counts BEFORE UPDATE OF status ON job_runs
    FOR EACH ROW EXECUTE FUNCTION baton_shard_requeue_counts();
