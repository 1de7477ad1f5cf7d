-- Fold the stripes back into one row per (job, generation, run, state).
CREATE TEMPORARY TABLE job_ledger_counts_folded AS
    SELECT job_name, generation, run_id, state, sum(n)::bigint AS n FROM job_ledger_counts GROUP BY 1, 2, 3, 4;
DELETE FROM job_ledger_counts;
ALTER TABLE job_ledger_counts DROP CONSTRAINT job_ledger_counts_pkey;
ALTER TABLE job_ledger_counts DROP COLUMN stripe;
INSERT INTO job_ledger_counts (job_name, generation, run_id, state, n)
    SELECT job_name, generation, run_id, state, n FROM job_ledger_counts_folded;
ALTER TABLE job_ledger_counts ADD PRIMARY KEY (job_name, generation, run_id, state);
DROP TABLE job_ledger_counts_folded;
