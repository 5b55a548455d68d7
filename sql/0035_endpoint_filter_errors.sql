set local lock_timeout = '5s';

-- Per-endpoint filter errors (docs/webhooks.md, "Filters", "When it fails"): how many times an endpoint's filter could
-- not say whether an event passes (an error, its budget, a filter today's rules refuse), and the last such error, which
-- the endpoint's stats answer shows. Written by the transaction that emits the event
-- (domain/webhooks/outbox/filter_errors.ts): counted with the event, or with neither.
--
-- Rows per endpoint, not one: a transaction adds to a row no other transaction holds (`for update skip locked`) or,
-- when all are held, makes a new one, so emitting never waits on another transaction's count, and the rows of an
-- endpoint never outnumber the transactions that counted at once. Reads sum them. No foreign key to the endpoint: its
-- check would lock the endpoint's row against an update or a recover holding it, which is the wait this avoids.
create table webhook_endpoint_filter_errors (
  id uuid primary key,
  company_id uuid not null,
  endpoint_id uuid not null,
  errors bigint not null default 0,
  last_error text,
  last_error_at timestamptz
);

create index webhook_endpoint_filter_errors_endpoint_idx on webhook_endpoint_filter_errors (company_id, endpoint_id);
