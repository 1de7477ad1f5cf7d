-- API tokens: bearer tokens for the GraphQL API, stored as the SHA-256 of the token (hex), never
-- the token itself. A name identifies one live token; a revoked token keeps its row (and name)
-- for the audit trail, so the uniqueness of names only covers live tokens.

CREATE TABLE api_tokens (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name         text        NOT NULL CHECK (name <> '' AND length(name) <= 100),
    role         text        NOT NULL CHECK (role IN ('viewer', 'operator', 'approver', 'admin')),
    token_hash   text        NOT NULL UNIQUE CHECK (token_hash ~ '^[0-9a-f]{64}$'),
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz,
    revoked_at   timestamptz
);

CREATE UNIQUE INDEX api_tokens_live_name ON api_tokens (name) WHERE revoked_at IS NULL;
