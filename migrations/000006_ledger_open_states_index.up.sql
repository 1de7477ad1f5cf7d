-- The ledger's state filter needs an index only for the states that are rare: an operator
-- looks for the failed, ambiguous, skipped or in-flight targets of a job, while CONFIRMED —
-- nearly every row — is best found by walking job_ledger_job_id. A partial index over the
-- other states costs nothing on the hot path (a confirmed item inserts no entry into it),
-- where the full (job_name, state, id) index cost one more btree insert per item.
CREATE INDEX job_ledger_job_open_state ON job_ledger (job_name, state, id) WHERE state <> 'CONFIRMED';
DROP INDEX job_ledger_job_state;
