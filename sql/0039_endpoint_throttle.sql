set local lock_timeout = '5s';

-- Per-endpoint delivery throttle (docs/webhooks.md, "Throttle"). `rate_limit` is the integrator's setting: deliveries
-- per second to the endpoint, null for none. The service checks its bounds (domain/webhooks/endpoints/throttle.ts);
-- no CHECK here, which would scan the endpoints under this file's lock for a column that is null everywhere.
--
-- `webhook_endpoint_throttles` is the throttle's state, one row per endpoint that has a rate_limit or was told to
-- wait by a 429 with Retry-After: `next_send_at`, the earliest instant the endpoint's next attempt may start. Every
-- claim of every instance takes its turn from this row in the claiming statement itself (under the row's lock), so the
-- rate holds across instances. A table of its own rather than a column of webhook_endpoints: a tenant's request that
-- holds the endpoint's row (an update) does not hold up its deliveries, and the record statement, which already
-- updates endpoint rows for their health, never updates one row twice.
--
-- Expand only: a nullable column and a new table, which 1.1.0 ignores (its drainers do not throttle: docs/webhooks.md,
-- "Throttle").
alter table webhook_endpoints add column rate_limit double precision;

create table webhook_endpoint_throttles (
  endpoint_id uuid primary key references webhook_endpoints (id) on delete cascade,
  next_send_at timestamptz not null default '-infinity'
);

-- the retry timer's look for the next endpoint whose turn comes (domain/webhooks/engine/statements/due.ts)
create index webhook_endpoint_throttles_next_idx on webhook_endpoint_throttles (next_send_at);
