set local lock_timeout = '5s';

-- Delivery records whose endpoint's filter was not evaluated when they were written, for want of the company's filter
-- time (docs/webhooks.md, "What a company's filters may spend"): written in the event's own transaction with the
-- records, which wait with `next_attempt_at` at `'9999-01-01'` (domain/webhooks/outbox/filter_deferrals.ts), so that
-- no instance, of this release or the previous one, tries one before its filter has said yes. The engine decides
-- them in record order (domain/webhooks/engine/deferred_filters.ts): a yes makes the record due, a no deletes it, as
-- the fan-out would have written none, and the row goes. No foreign key: its check would lock the record's row
-- against the drainers; a row whose record is gone (retention, an acknowledge) is removed when it is reached.
create table webhook_filter_deferrals (
  delivery_id uuid primary key,
  company_id uuid not null,
  endpoint_id uuid not null,
  event_id uuid not null,
  -- the event's instant: where its partition of `events` is (its records are written at it)
  event_inserted_at timestamptz not null,
  deferred_at timestamptz not null default now()
);

create index webhook_filter_deferrals_company_idx on webhook_filter_deferrals (company_id, delivery_id);
create index webhook_filter_deferrals_endpoint_idx on webhook_filter_deferrals (company_id, endpoint_id);
-- the worker's sweep looks for verdicts nobody has given for a while (jobs/index.ts)
create index webhook_filter_deferrals_age_idx on webhook_filter_deferrals (deferred_at);

-- What the budget did to an endpoint's records, beside its filter errors (same rows, same way of counting): records
-- written deferred, and those of them its filter then refused (deleted).
alter table webhook_endpoint_filter_errors add column deferred bigint not null default 0;
alter table webhook_endpoint_filter_errors add column refused_after_deferral bigint not null default 0;
