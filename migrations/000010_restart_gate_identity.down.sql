DROP TRIGGER api_tokens_claim_name ON api_tokens;
DROP FUNCTION baton_claim_token_name();
DROP TABLE api_token_names;

ALTER TABLE replay_requests
    DROP COLUMN decided_by_token_id,
    DROP COLUMN requested_by_token_id,
    DROP COLUMN kind;
