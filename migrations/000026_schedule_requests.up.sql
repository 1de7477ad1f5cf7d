-- Schedule changes that need a second person.
--
-- A change that can make a HIGH-risk job's schedule fire (a cron set or changed, a timezone
-- changed, the schedule enabled) is recorded as a request of kind SCHEDULE, decided by another
-- identity like a RESTART request: each scheduled fire is a start the job's operator did not
-- make by hand. schedule_change holds the change as asked (cron, timezone, enabled,
-- leaseSeconds; a field absent stays as it is), applied when the request is approved.

ALTER TABLE replay_requests DROP CONSTRAINT replay_requests_kind_check;
ALTER TABLE replay_requests
    ADD CONSTRAINT replay_requests_kind_check CHECK (kind IN ('REPLAY', 'RESTART', 'SCHEDULE')),
    ADD COLUMN schedule_change jsonb,
    ADD CONSTRAINT replay_requests_schedule_change CHECK ((kind = 'SCHEDULE') = (schedule_change IS NOT NULL));
