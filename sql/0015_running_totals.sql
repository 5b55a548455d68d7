-- What each subject moved per calendar year (UTC) and currency, kept up to date by the transaction rows themselves,
-- so a clearance decision and the transaction_values answer read a handful of rows however long the history is
-- (docs/clearance.md, "Running totals").

-- The one definition of money that counts: a status that moved money, and not a refund (which gives back money
-- counted when it came in).
alter table transactions add column counted boolean generated always as (
  status in ('identified', 'approved', 'exchanged', 'wired', 'waiting_correction') and kind <> 'refund'
) stored;

create table subject_totals (
  company_id uuid not null,
  subject_id uuid not null references people (id),
  year integer not null,
  currency text not null,
  value numeric(30, 2) not null,
  usd_value numeric(30, 2) not null,
  count integer not null,
  primary key (subject_id, year, currency)
);

create function track_subject_totals() returns trigger language plpgsql as $$
begin
  if tg_op = 'UPDATE' and old.counted = new.counted and old.value = new.value
     and old.usd_value = new.usd_value and old.currency = new.currency
     and date_trunc('year', old.inserted_at at time zone 'UTC') = date_trunc('year', new.inserted_at at time zone 'UTC')
  then
    return null; -- identified → exchanged → wired: still the same money
  end if;
  if tg_op = 'UPDATE' and old.counted then
    update subject_totals
    set value = value - old.value, usd_value = usd_value - old.usd_value, count = count - 1
    where subject_id = old.subject_id
      and year = extract(year from old.inserted_at at time zone 'UTC')::int
      and currency = old.currency;
  end if;
  if new.counted then
    insert into subject_totals (company_id, subject_id, year, currency, value, usd_value, count)
    values (new.company_id, new.subject_id, extract(year from new.inserted_at at time zone 'UTC')::int,
            new.currency, new.value, new.usd_value, 1)
    on conflict (subject_id, year, currency) do update
    set value = subject_totals.value + excluded.value,
        usd_value = subject_totals.usd_value + excluded.usd_value,
        count = subject_totals.count + 1;
  end if;
  return null;
end
$$;

create trigger transactions_track_subject_totals
  after insert or update of status, kind, value, usd_value, currency, inserted_at on transactions
  for each row execute function track_subject_totals();

insert into subject_totals (company_id, subject_id, year, currency, value, usd_value, count)
select company_id, subject_id, extract(year from inserted_at at time zone 'UTC')::int, currency,
       sum(value), sum(usd_value), count(*)
from transactions
where counted
group by 1, 2, 3, 4;

-- the subject transactions list pages by id
create index transactions_subject_id_idx on transactions (company_id, subject_id, id);
drop index transactions_subject_idx;
