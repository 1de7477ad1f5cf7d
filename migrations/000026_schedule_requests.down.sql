DELETE FROM replay_requests WHERE kind = 'SCHEDULE';
ALTER TABLE replay_requests
    DROP CONSTRAINT replay_requests_schedule_change,
    DROP COLUMN schedule_change,
    DROP CONSTRAINT replay_requests_kind_check;
ALTER TABLE replay_requests ADD CONSTRAINT replay_requests_kind_check CHECK (kind IN ('REPLAY', 'RESTART'));
