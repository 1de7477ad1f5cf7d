-- A channel URL that carries credentials (userinfo, a query, a fragment or a path, which may
-- hold a token) is stored sealed, as "enc:v1:<base64 AES-GCM>" under the cluster's secret key,
-- like a channel's secret (docs/adr/0023-outbound-calls-and-secrets.md). A sealed URL is longer
-- than the URL it seals: the column takes up to 4096 characters; the API still bounds a URL
-- at 2048. A credential URL stored before is sealed by the next instance with the secret key to
-- start (audited as sealNotificationChannelURL); until then it is hidden from callers below
-- ADMIN all the same.
ALTER TABLE notification_channels DROP CONSTRAINT notification_channels_url_check;
ALTER TABLE notification_channels ADD CONSTRAINT notification_channels_url_check CHECK (length(url) <= 4096);
