CREATE INDEX job_ledger_job_state ON job_ledger (job_name, state, id);
DROP INDEX job_ledger_job_open_state;
