DROP TABLE IF EXISTS audit_log;
DROP TABLE IF EXISTS job_call_stats;
DROP TABLE IF EXISTS replay_requests;
DROP TABLE IF EXISTS job_ledger_counts;
DROP TABLE IF EXISTS job_ledger;
