-- Demo jobs (internal/demo, `baton serve --demo`): what demo-collect writes, and the fake payment
-- provider's own record of applied effects. Not part of the runner's schema.

-- One row per collected page of a business date, written in the item transaction.
CREATE TABLE demo_collected (
    page          integer NOT NULL,
    business_date date    NOT NULL,
    items         integer NOT NULL,
    run_id        bigint  NOT NULL,
    PRIMARY KEY (page, business_date)
);

-- The fake provider's own record: one row per application. It does not dedupe by key (unless
-- configured to), so a duplicate effect shows up as a second row with the same key.
CREATE TABLE demo_provider_effects (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    idempotency_key text        NOT NULL,
    target_key      text        NOT NULL,
    amount          bigint      NOT NULL,
    applied_at      timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX demo_provider_effects_key ON demo_provider_effects (idempotency_key);
