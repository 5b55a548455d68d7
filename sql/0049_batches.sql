set local lock_timeout = '5s';

-- Batches (docs/webhooks.md, "Batches"): an HTTP endpoint with `batch` ({max_events, max_wait_ms}; null without)
-- receives its events as JSON arrays, one request per batch. A batch is a unit, fixed at its first attempt: its
-- records carry its id (`batch_id`, null for a record sent alone), and `webhook_batches` lists its records, so that an
-- acknowledge or a retry of one record reaches the others by primary key (an index on webhook_deliveries.batch_id
-- cannot be built here: the migrator runs each file in a transaction, and a plain build would block the queue's
-- writes). Nullable columns and a new table: no row changes, the locks last an instant.
alter table webhook_endpoints add column batch jsonb;

alter table webhook_deliveries add column batch_id uuid;

create table webhook_batches (
  id uuid primary key,
  company_id uuid not null,
  endpoint_id uuid not null,
  delivery_ids uuid[] not null,
  inserted_at timestamptz not null default now()
);

-- retention deletes the oldest first (domain/webhooks/endpoints/retention.ts)
create index webhook_batches_inserted_idx on webhook_batches (inserted_at);

-- The health aggregate counts requests beside events (docs/webhooks.md, "Endpoint health"): an attempt of a batch
-- counts once per record in the outcome columns, as before; `batch_requests` counts the requests that carried
-- batches and `batched_events` the records they carried, so requests = attempts - batched_events + batch_requests.
-- Null (the previous release's rows, and this release's without batches) counts 0.
alter table webhook_endpoint_stats add column batch_requests bigint, add column batched_events bigint;

alter table webhook_endpoint_stats_hourly add column batch_requests bigint, add column batched_events bigint;

-- Where an endpoint's slot rows are numbered from, now with batches (docs/production.md, "Old and new side by side"):
-- 0 for an http endpoint sending one record a request, 1,000,000 for a broker endpoint (sql/0047), 2,000,000 for a
-- batched one. The previous release leases only slots numbered below max_concurrency (at most 100): it never leases
-- a batched endpoint's slot, so it never claims a batch's records and sends them one by one.
create function endpoint_slot_base(transport text, batch jsonb) returns integer
  language sql immutable parallel safe
  as $$ select case when transport <> 'http' then 1000000 when batch is not null then 2000000 else 0 end $$;

-- The trigger of sql/0047, now keeping every endpoint's slot rows in its range by `endpoint_slot_base`: the previous
-- release's `fitSlots` (inserting 0..n-1 for an active endpoint, deleting those above) skips a batched endpoint's
-- slots as it skips a broker endpoint's. This release moves an endpoint's slots itself when `batch` is set or removed
-- (domain/webhooks/endpoints/quotas.ts, `fitSlots`): the rows of the other range are out of range, so deleted.
create or replace function webhook_slots_in_range() returns trigger language plpgsql as $$
declare
  e record;
  base integer;
begin
  if tg_op = 'INSERT' then
    select transport, batch into e from webhook_endpoints where id = new.endpoint_id;
    base := endpoint_slot_base(e.transport, e.batch);
    if new.slot < base or new.slot >= base + 1000000 then
      return null;
    end if;
    return new;
  end if;
  select transport, batch, status, max_concurrency into e from webhook_endpoints where id = old.endpoint_id;
  base := endpoint_slot_base(e.transport, e.batch);
  if base <> 0 and e.status = 'active' and old.slot >= base and old.slot < base + e.max_concurrency then
    return null;
  end if;
  return old;
end $$;
