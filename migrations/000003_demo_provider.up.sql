-- Version 3 once created the demo jobs' tables (demo_collected, demo_provider_effects). They
-- are not part of Baton's schema: internal/demo now creates them with migrations of its own,
-- recorded in demo_schema_migrations, when the demo is served (docs/adr/0007-demo-schema.md).
-- The version stays in the chain, empty, so databases that ran it keep a consistent history;
-- a new database gets no demo table from `baton migrate up`.
SELECT 1;
