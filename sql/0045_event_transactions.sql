set local lock_timeout = '5s';

-- Which events name which transaction (docs/webhooks.md, "Search by event or transaction id"), so the events list's
-- `transaction_id` filter reads the events that name it by one index, instead of reading the company's events from
-- the transaction's creation on and keeping those whose data names it. One row per event and transaction it names
-- (`transaction_id`, or each of `transaction_ids`), with the event's instant, which locates its delivery records.
--
-- Written by a trigger on events, not by the service: every insert of an event makes its rows, whichever release
-- wrote it. During a rolling upgrade the previous release (which knows nothing of this table) keeps emitting events
-- beside this one, and a rollback runs it alone on this schema: its events are found all the same. The table goes
-- with its events (domain/webhooks/endpoints/retention.ts): its rows are deleted in batches once their day of
-- events is gone, found by the block-range index on `inserted_at`, which costs an insert next to nothing.
create table event_transactions (
  company_id uuid not null,
  transaction_id uuid not null,
  inserted_at timestamptz not null,
  event_id uuid not null,
  primary key (company_id, transaction_id, inserted_at, event_id)
);

create index event_transactions_inserted_idx on event_transactions using brin (inserted_at);

-- From this instant on, every event that names a transaction has its rows. Events written before it (the history
-- kept when this migration ran) are found by the bounded read of the events themselves, as before; once they pass
-- the retention, nothing is read that way any more. Taken after the trigger below is in place: CREATE TRIGGER waits
-- for every transaction writing events to end and holds back new ones until this commits, so an event without its
-- rows was written by a transaction that began before this instant.
create table event_transactions_since (since timestamptz not null);

-- Any value that is not a UUID is passed over (no emitter writes one: the catalogue's schemas say uuid), so an event's
-- insert never fails for its data. The usual event names one transaction: a plain insert of one row, half the cost of
-- the set-based insert that a list needs (19 against 39 us a row, EXPLAIN ANALYZE).
create function record_event_transactions() returns trigger language plpgsql as $$
begin
  if jsonb_typeof(new.data->'transaction_id') = 'string'
     and new.data->>'transaction_id' ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' then
    insert into event_transactions (company_id, transaction_id, inserted_at, event_id)
    values (new.company_id, (new.data->>'transaction_id')::uuid, new.inserted_at, new.id);
  end if;
  if jsonb_typeof(new.data->'transaction_ids') = 'array' then
    insert into event_transactions (company_id, transaction_id, inserted_at, event_id)
    select distinct new.company_id, named::uuid, new.inserted_at, new.id
    from jsonb_array_elements_text(new.data->'transaction_ids') as named
    where named ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
    on conflict do nothing;
  end if;
  return null;
end
$$;

-- On the partitioned table: Postgres puts it on every partition, and on each one made later.
create trigger events_record_transactions after insert on events
  for each row when (new.data ? 'transaction_id' or new.data ? 'transaction_ids')
  execute function record_event_transactions();

insert into event_transactions_since select clock_timestamp();
