-- An endpoint signs either with a shared secret (HMAC-SHA256, the default) or with an Ed25519 key pair, Standard
-- Webhooks' asymmetric scheme (docs/webhooks.md, "Ed25519 signatures"). An ed25519 endpoint has no shared secret: its
-- private key is stored sealed like the secrets (`whsk_...`, never shown), its public key (`whpk_...`) in clear, since
-- the API publishes it. Keys rotated away keep signing for 24 hours, each with its own expiry, as secrets do.
alter table webhook_endpoints
  add column signature_scheme text not null default 'hmac-sha256'
    check (signature_scheme in ('hmac-sha256', 'ed25519')),
  add column sealed_signing_key text,
  add column public_key text,
  -- [{"secret_key": <sealed>, "public_key": "whpk_...", "expires_at": <timestamptz>}, ...], newest first.
  add column previous_signing_keys jsonb not null default '[]'
    check (jsonb_typeof(previous_signing_keys) = 'array'),
  alter column sealed_secret drop not null;

-- Each scheme has its own current credential and only that one; the previous ones of the other scheme may remain for
-- their 24 hours after a switch.
alter table webhook_endpoints add constraint webhook_endpoints_scheme_credentials check (
  case signature_scheme
    when 'hmac-sha256' then sealed_secret is not null and sealed_signing_key is null and public_key is null
    else sealed_secret is null and sealed_signing_key is not null and public_key is not null
  end
);
