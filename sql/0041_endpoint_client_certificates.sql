set local lock_timeout = '5s';

-- A client certificate per webhook endpoint (docs/webhooks.md, "Client certificates (mTLS)"): presented on every
-- attempt to a receiver that asks for one. The certificate (PEM, leaf first, then any intermediates) is public and
-- kept as it is; its private key is sealed for this row (domain/infra/secret_box.ts), as the signing secrets are,
-- and re-sealed by `deno task reseal-secrets`. Both null: no certificate. Nullable, so the previous release, which
-- ignores them, keeps writing rows.
alter table webhook_endpoints
  add column if not exists client_certificate text,
  add column if not exists sealed_client_key text;
