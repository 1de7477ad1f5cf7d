-- ledger(jobName, targetPrefix): the targets of a job whose key begins with a prefix. LIKE
-- 'prefix%' can use a btree index only when its operator class compares bytes: the database's
-- collation (C.UTF-8, en_US.UTF-8, ...) orders strings otherwise, so the default operator class
-- cannot bound a prefix. Without it the prefix filter walks every row of the job.
CREATE INDEX job_ledger_job_target_prefix ON job_ledger (job_name, target_key text_pattern_ops);
