set local lock_timeout = '5s';

-- OAuth2 client credentials per endpoint (docs/webhooks.md, "OAuth2 client credentials"): where the service gets a
-- bearer token for the endpoint's receiver. One jsonb object, null for an endpoint without it:
-- {token_url, client_id, sealed_client_secret, scope, audience}. The client secret is sealed like the signing secrets
-- (domain/infra/secret_box.ts), for a context of its own, so it never sits in this table in plain text.
-- Nullable and without a default: adding it rewrites nothing, and the previous release, which never reads it, goes on
-- delivering without a token.
alter table webhook_endpoints add column oauth2 jsonb;
