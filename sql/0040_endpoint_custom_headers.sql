set local lock_timeout = '5s';

-- Custom headers per endpoint (docs/webhooks.md, "Custom headers"): sent with every attempt to the endpoint, for the
-- gateways and firewalls in front of receivers. Plain values in clear, since the API shows them; values the
-- integrator marked secret sealed like the signing secrets (domain/infra/secret_box.ts), each for its endpoint and
-- header name, and shown masked only. Both default to no header: the previous release never reads them.
alter table webhook_endpoints
  -- {"X-Tenant": "acme", ...}: names as the integrator wrote them, unique regardless of case across both maps
  add column custom_headers jsonb not null default '{}',
  -- {"X-Api-Key": <sealed>, ...}
  add column sealed_custom_headers jsonb not null default '{}';
