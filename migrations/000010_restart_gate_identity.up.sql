-- Four-eyes on identity, and RESTART requests.
--
-- Replay requests name who asked and who decided by token id as well as by name: the approver
-- must be a different identity from the requester, and a name is only a label. A request made
-- by code (no token) keeps the id NULL and is identified by its actor name alone.
--
-- A request's kind says what it runs once approved: a REPLAY of part of a generation, or a
-- RESTART that opens a new generation (every target called again under new keys).

ALTER TABLE replay_requests
    ADD COLUMN kind                  text NOT NULL DEFAULT 'REPLAY' CHECK (kind IN ('REPLAY', 'RESTART')),
    ADD COLUMN requested_by_token_id bigint,
    ADD COLUMN decided_by_token_id   bigint;

-- A token name is issued once, ever: revoked tokens keep theirs, so that a name in runs, the
-- audit log and replay requests always means the same token. api_tokens_live_name only covers
-- live tokens (and older databases may hold a revoked name issued again), so the names ever
-- issued are kept in a table of their own, which every insert into api_tokens claims a row of.
CREATE TABLE api_token_names (
    name       text PRIMARY KEY,
    claimed_at timestamptz NOT NULL DEFAULT now()
);

INSERT INTO api_token_names (name, claimed_at)
SELECT name, min(created_at) FROM api_tokens GROUP BY name;

CREATE FUNCTION baton_claim_token_name() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO api_token_names (name) VALUES (NEW.name);
    RETURN NEW;
END;
$$;

CREATE TRIGGER api_tokens_claim_name BEFORE INSERT ON api_tokens
    FOR EACH ROW EXECUTE FUNCTION baton_claim_token_name();
