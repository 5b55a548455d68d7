-- The two append-only logs of the webhook history, events and attempts, in daily partitions of `inserted_at`, so
-- retention drops whole days instead of deleting rows one by one and leaving VACUUM the rest (docs/webhooks.md,
-- "Retention"). Delivery records are not a log: they are the queue, updated on every attempt and read by every
-- drain, so they stay one table whose hot queries never have to look through a month of partitions; retention
-- deletes them in bounded batches.
--
-- Everything written before this migration goes into one partition per table, `<table>_p_before_<day>`, covering
-- every time before that day; then one partition per UTC day, `<table>_p<YYYYMMDD>`, created ahead of time by
-- `ensure_history_partitions` (called by every migration run, every start and the hourly retention job).
--
-- A primary key of a partitioned table includes the partition key: ids stay unique (UUIDv7, made by the service),
-- the key is (id, inserted_at). The foreign key from delivery records to events goes for the same reason: a record is
-- written in the same statement as its event with the same `inserted_at`, which is how reads find the event's day.

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
  execute format('create table %I partition of %I for values from (%L) to (%L)', name, parent,
    history_partition_bound(day), history_partition_bound(day + 1));
  return true;
end
$$;

-- Partitions from today (UTC) to `days_ahead` days on, for both logs; answers how many it created.
create function ensure_history_partitions(days_ahead integer) returns integer language plpgsql as $$
declare
  today date := (now() at time zone 'UTC')::date;
  created integer := 0;
  parent text;
  day date;
begin
  foreach parent in array array['events', 'webhook_attempts'] loop
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

alter table webhook_deliveries drop constraint webhook_deliveries_event_id_fkey;

do $$
declare
  today date := (now() at time zone 'UTC')::date;
  parent text;
begin
  foreach parent in array array['events', 'webhook_attempts'] loop
    execute format('alter table %I rename to %I', parent, parent || '_unpartitioned');
    execute format('create table %I (like %I including defaults including constraints) partition by range (inserted_at)',
      parent, parent || '_unpartitioned');
    execute format('create table %I partition of %I for values from (minvalue) to (%L)',
      parent || '_p_before_' || to_char(today, 'YYYYMMDD'), parent, history_partition_bound(today));
  end loop;
end
$$;

alter table events add primary key (id, inserted_at);
alter table events add foreign key (company_id) references companies (id);
alter table webhook_attempts add primary key (id, inserted_at);

insert into events select * from events_unpartitioned;
insert into webhook_attempts select * from webhook_attempts_unpartitioned;
drop table webhook_attempts_unpartitioned;
drop table events_unpartitioned;

create index events_company_idx on events (company_id, id);
create index webhook_attempts_delivery_idx on webhook_attempts (delivery_id, attempt_number);
-- retention: the records past it, oldest first, and whether a day still holds a pending record
create index webhook_deliveries_inserted_idx on webhook_deliveries (inserted_at);

select ensure_history_partitions(3);
