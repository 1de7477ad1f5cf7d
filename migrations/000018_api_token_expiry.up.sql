-- Tokens may expire: expires_at is when the server stops accepting the token (NULL: never).
-- An expired token keeps its row and its name, as a revoked one does.

ALTER TABLE api_tokens
    ADD COLUMN expires_at timestamptz,
    ADD CONSTRAINT api_tokens_expires_after_creation CHECK (expires_at IS NULL OR expires_at > created_at);
