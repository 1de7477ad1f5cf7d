DROP TABLE IF EXISTS notification_outbox;
DROP FUNCTION IF EXISTS baton_glob_like(text);
DROP TABLE IF EXISTS notification_routes;
DROP TABLE IF EXISTS notification_channels;
