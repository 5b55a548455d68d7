-- Why an endpoint stopped receiving (docs/webhooks.md, "When an endpoint is disabled"): `manual` (DELETE or PUT
-- status), `gone` (a receiver answered 410), `failing` (nothing but failed attempts for WEBHOOK_DISABLE_AFTER_SECONDS).
alter table webhook_endpoints
  add column disabled_reason text check (disabled_reason in ('manual', 'gone', 'failing')),
  add column disabled_at timestamptz,
  -- The first failed attempt since the last success; null while attempts succeed. Written only when it changes, so
  -- a healthy endpoint's row is not updated per attempt.
  add column failing_since timestamptz;

update webhook_endpoints set disabled_reason = 'manual', disabled_at = updated_at where status = 'disabled';

-- A few headers of the receiver's answer (content-type, retry-after, server, request ids), never cookies or
-- credentials.
alter table webhook_attempts add column response_headers jsonb;
