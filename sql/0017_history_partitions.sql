-- Webhook history (events, delivery records, attempts) in daily partitions of `inserted_at`, so retention drops whole
-- days instead of deleting rows one by one and leaving VACUUM the rest (docs/webhooks.md, "Retention"). Everything
-- written before this migration goes into one partition per table, `<table>_p_before_<day>`, covering every time
-- before that day; then one partition per UTC day, `<table>_p<YYYYMMDD>`, created ahead of time by
-- `ensure_history_partitions` (called by every migration run and by the hourly retention job).
--
-- A primary key of a partitioned table includes the partition key: ids stay unique (UUIDv7, made by the service),
-- the key is (id, inserted_at). The foreign key from delivery records to events goes for the same reason: a record is
-- written in the same transaction as its event, so both carry the same `inserted_at` and land in the same day.

-- The first day with a partition of its own; everything before is in the `_p_before_` partitions.
create table history_partitioned_since (first_day date not null);
insert into history_partitioned_since values ((now() at time zone 'UTC')::date);

create function history_partition_bound(day date) returns timestamptz language sql immutable as $$
  select day::timestamp at time zone 'UTC'
$$;

create function create_history_partition(parent text, day date) returns boolean language plpgsql as $$
declare
  name text := parent || '_p' || to_char(day, 'YYYYMMDD');
begin
  if to_regclass(name) is not null then
    return false;
  end if;
  execute format('create table %I partition of %I for values from (%L) to (%L)%s', name, parent,
    history_partition_bound(day), history_partition_bound(day + 1),
    -- room on each page so that leasing a record is a HOT update, as on the table before
    case when parent = 'webhook_deliveries' then ' with (fillfactor = 80)' else '' end);
  return true;
end
$$;

-- Partitions from today (UTC) to `days_ahead` days on, for the three history tables; answers how many it created.
create function ensure_history_partitions(days_ahead integer) returns integer language plpgsql as $$
declare
  today date := (now() at time zone 'UTC')::date;
  created integer := 0;
  parent text;
  day date;
begin
  foreach parent in array array['events', 'webhook_deliveries', 'webhook_attempts'] loop
    for day in select generate_series(today, today + days_ahead, interval '1 day')::date loop
      -- a day the catch-all partition of the history before partitioning already covers
      continue when day < (select first_day from history_partitioned_since);
      if create_history_partition(parent, day) then
        created := created + 1;
      end if;
    end loop;
  end loop;
  return created;
end
$$;

do $$
declare
  today date := (now() at time zone 'UTC')::date;
  parent text;
begin
  foreach parent in array array['events', 'webhook_deliveries', 'webhook_attempts'] loop
    execute format('alter table %I rename to %I', parent, parent || '_unpartitioned');
    execute format('create table %I (like %I including defaults including constraints) partition by range (inserted_at)',
      parent, parent || '_unpartitioned');
    execute format('create table %I partition of %I for values from (minvalue) to (%L)%s',
      parent || '_p_before_' || to_char(today, 'YYYYMMDD'), parent, history_partition_bound(today),
      case when parent = 'webhook_deliveries' then ' with (fillfactor = 80)' else '' end);
  end loop;
end
$$;

alter table events add primary key (id, inserted_at);
alter table events add foreign key (company_id) references companies (id);
alter table webhook_deliveries add primary key (id, inserted_at);
alter table webhook_deliveries add foreign key (company_id) references companies (id);
alter table webhook_deliveries add foreign key (endpoint_id) references webhook_endpoints (id);
alter table webhook_attempts add primary key (id, inserted_at);

insert into events select * from events_unpartitioned;
insert into webhook_deliveries select * from webhook_deliveries_unpartitioned;
insert into webhook_attempts select * from webhook_attempts_unpartitioned;
drop table webhook_attempts_unpartitioned;
drop table webhook_deliveries_unpartitioned;
drop table events_unpartitioned;

create index events_company_idx on events (company_id, id);
create index webhook_deliveries_company_idx on webhook_deliveries (company_id, inserted_at, id);
create index webhook_deliveries_due_idx on webhook_deliveries (endpoint_id, next_attempt_at, id) where status = 'pending';
create index webhook_deliveries_head_idx on webhook_deliveries (endpoint_id, id) where status = 'pending';
create index webhook_deliveries_stalled_idx on webhook_deliveries (next_attempt_at) where status = 'pending';
create index webhook_deliveries_type_idx on webhook_deliveries (company_id, type, inserted_at, id);
create index webhook_deliveries_status_idx on webhook_deliveries (company_id, status, inserted_at, id);
create index webhook_deliveries_endpoint_idx on webhook_deliveries (company_id, endpoint_id, status, inserted_at, id);
-- retention keeps the events of pending records
create index webhook_deliveries_pending_event_idx on webhook_deliveries (event_id) where status = 'pending';
create index webhook_attempts_delivery_idx on webhook_attempts (delivery_id, attempt_number);

select ensure_history_partitions(14);
