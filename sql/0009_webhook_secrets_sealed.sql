-- Signing secrets are stored sealed (AES-256-GCM under SECRET_ENCRYPTION_KEY; docs/production.md), and an endpoint
-- keeps every secret rotated away within the last 24 hours, each with its own expiry, instead of one previous
-- secret that the next rotation replaced at once.
--
-- The key never reaches SQL, so this file only reshapes. Values still in plain text are sealed by the service when
-- it starts, before it reads any (sealed values begin with "enc:", plain ones are 64 hex characters). The new
-- names keep code that expects plain text in `secret` from reading them.
alter table webhook_endpoints rename column secret to sealed_secret;

-- [{"secret": <sealed>, "expires_at": <timestamptz>}, ...], newest first.
alter table webhook_endpoints add column sealed_previous_secrets jsonb not null default '[]'
  check (jsonb_typeof(sealed_previous_secrets) = 'array');

update webhook_endpoints
set sealed_previous_secrets = jsonb_build_array(
  jsonb_build_object('secret', previous_secret, 'expires_at', previous_secret_expires_at)
)
where previous_secret is not null and previous_secret_expires_at > now();

alter table webhook_endpoints drop column previous_secret, drop column previous_secret_expires_at;
