-- The trace a run belongs to (docs/adr/0020-trace-propagation.md): the W3C traceparent of the
-- run's span, written with the run. An instance that works the run's shards makes each shard's
-- span a child of it, so one trace holds the run however many instances work it; an
-- AUTO_RESUME run continues the trace of the run it resumes. NULL when tracing was off.
ALTER TABLE job_runs ADD COLUMN trace_parent text;
