ALTER TABLE replay_requests
    DROP CONSTRAINT IF EXISTS replay_requests_claim_whole,
    DROP COLUMN IF EXISTS reopen_reason,
    DROP COLUMN IF EXISTS claim_until,
    DROP COLUMN IF EXISTS claim_token;
