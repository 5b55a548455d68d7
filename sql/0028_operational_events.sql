-- Operational events (docs/webhooks.md, "Operational events"): `endpoint.failing` is sent once per failing streak of
-- an endpoint, after WEBHOOK_FAILING_AFTER_ATTEMPTS failed attempts in a row or WEBHOOK_FAILING_AFTER_SECONDS of
-- nothing but failures. Both columns are written by the statement that records attempts
-- (domain/webhooks/engine/statements/record.ts), like `failing_since` only on a failure and at the first success
-- after one, so a healthy endpoint's row is not updated per attempt. Adding them rewrites nothing (a constant default).
alter table webhook_endpoints
  -- Attempts that failed since the last success; 0 while attempts succeed.
  add column consecutive_failures integer not null default 0,
  -- When `endpoint.failing` was emitted for the streak under way; null until then, and again after a success.
  add column failing_alerted_at timestamptz;
