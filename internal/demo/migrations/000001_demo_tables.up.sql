-- The demo jobs' tables: what demo-collect writes, and the fake payment provider's own record
-- of applied effects. Not part of Baton's schema (docs/adr/0007-demo-schema.md).
--
-- IF NOT EXISTS throughout: a database migrated by a binary older than this chain already has
-- these tables, made by the product's migration 3 with exactly these definitions, and keeps
-- its rows.

-- One row per collected page of a business date, written in the item transaction.
CREATE TABLE IF NOT EXISTS demo_collected (
    page          integer NOT NULL,
    business_date date    NOT NULL,
    items         integer NOT NULL,
    run_id        bigint  NOT NULL,
    PRIMARY KEY (page, business_date)
);

-- The fake provider's own record: one row per application. It does not dedupe by key (unless
-- configured to), so a duplicate effect shows up as a second row with the same key.
CREATE TABLE IF NOT EXISTS demo_provider_effects (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    idempotency_key text        NOT NULL,
    target_key      text        NOT NULL,
    amount          bigint      NOT NULL,
    applied_at      timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX IF NOT EXISTS demo_provider_effects_key ON demo_provider_effects (idempotency_key);
