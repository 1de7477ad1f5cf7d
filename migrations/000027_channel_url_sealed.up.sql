-- A channel URL that carries credentials (userinfo, a query, a fragment or a path, which may
-- hold a token) is stored sealed, as "enc:v1:<base64 AES-GCM>" under the cluster's secret key,
-- like a channel's secret (docs/adr/0023-outbound-calls-and-secrets.md). A sealed URL is longer
-- than the URL it seals: the column takes up to 4096 characters; the API still bounds a URL
-- at 2048. A credential URL stored before is sealed by the next instance with the secret key to
-- start (audited as sealNotificationChannelURL); until then it is hidden from callers below
-- ADMIN all the same.
ALTER TABLE notification_channels DROP CONSTRAINT notification_channels_url_check;
ALTER TABLE notification_channels ADD CONSTRAINT notification_channels_url_check CHECK (length(url) <= 4096);

-- A delivery's last error keeps an error answer's status line alone. Errors recorded before
-- held the first 512 bytes of the answer's body, which a VIEWER reads: they keep their status
-- code only.
UPDATE notification_outbox
SET last_error = regexp_replace(last_error, '^the receiver answered ([0-9]{3})\M.*$', 'HTTP \1 (the answer''s body, kept before, was dropped)', 's')
WHERE last_error LIKE 'the receiver answered %';
