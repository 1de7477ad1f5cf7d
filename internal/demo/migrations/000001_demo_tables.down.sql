DROP TABLE IF EXISTS demo_provider_effects;
DROP TABLE IF EXISTS demo_collected;
