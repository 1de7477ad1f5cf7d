ALTER TABLE api_tokens DROP COLUMN expires_at;
