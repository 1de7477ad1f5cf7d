-- The generation's per-state counters (run_id 0) are split into stripes, so that the shards of
-- one run, each committing its items at once on its own connection, do not queue on the same
-- counter row: a run adds to the stripe of its own id (run id % 16). Readers sum the stripes,
-- as they already summed a sharded run's shards. See docs/adr/0019-sharded-runs.md.
ALTER TABLE job_ledger_counts ADD COLUMN stripe smallint NOT NULL DEFAULT 0;
ALTER TABLE job_ledger_counts DROP CONSTRAINT job_ledger_counts_pkey;
ALTER TABLE job_ledger_counts ADD PRIMARY KEY (job_name, generation, run_id, state, stripe);
