-- Quotas on what a company stores (docs/limits.md, "Stored objects"): counters per company, so a create checks its
-- quota by updating a row instead of counting the company's history, which only grows. Subjects count both kinds
-- (people and company customers share the table and everything a subject can hold); bank accounts count the ones the
-- company registers, not the internal accounts the service opens for it; bytes are the sizes of the stored files (a
-- document given by URL has none here).
--
-- A company's counters are split over stripes, one per connection that created for it (its backend pid modulo 64).
-- A row lock is held until the commit's WAL flush, so with a single row every create of a company would wait for the
-- previous one's flush: measured here, single-row increments from 32 connections ran at about 2,900 a second against
-- 18,000 without the flush, and POST person of one company (deno task bench) fell to about half. Each stripe holds a
-- share of every quota (`*_room`): a create within its stripe's share is counted with that one row locked, and the
-- shares add up to the quota, so the company never passes it. A create whose stripe's share is spent locks every
-- stripe of the company and shares out again what is left, or refuses when nothing is: that exact answer is the one
-- given at the edge. A stripe's own count means nothing alone (it may go below zero after deletions); the sums are the
-- company's counts.
create table company_usage (
  company_id uuid not null references companies (id),
  stripe smallint not null,
  people integer not null default 0,
  bank_accounts integer not null default 0,
  documents integer not null default 0,
  document_bytes bigint not null default 0,
  people_room integer not null default 0,
  bank_accounts_room integer not null default 0,
  documents_room integer not null default 0,
  document_bytes_room bigint not null default 0,
  -- the quotas the rooms were shared for: changed settings share out again on the next create
  shared_for bigint[],
  primary key (company_id, stripe)
);

-- Takes room for what a create adds and fails the statement when that passes one of the quotas, so the create goes
-- with it; one statement, so a registration with nothing else to write stays a single round trip. Callers make it the
-- last statement before commit, since the stripe (or, sharing out, every stripe) stays locked until then. Only what
-- grows is compared: a quota lowered under the current count refuses new objects of that kind, never the others.
create function take_company_usage(
  company uuid, add_people integer, add_bank_accounts integer, add_documents integer, add_bytes bigint,
  max_people integer, max_bank_accounts integer, max_documents integer, max_bytes bigint
) returns boolean language plpgsql volatile as $$
declare
  -- one stripe per connection: the connections of a pool, and of several instances, mostly land on different rows
  mine constant integer := pg_backend_pid() % 64;
  wanted constant bigint[] := array[max_people, max_bank_accounts, max_documents, max_bytes];
  used record;
  spare_people bigint;
  spare_bank_accounts bigint;
  spare_documents bigint;
  spare_bytes bigint;
begin
  -- within this connection's stripe's share: the common case, one row locked. In a block of its own (a
  -- subtransaction): when another create changed the row meanwhile, UPDATE locks its newest version to check it again
  -- and keeps that lock even when it no longer fits; held into the ordered locking below, it would deadlock with
  -- another create sharing out. Leaving the block by an error gives it back.
  begin
    update company_usage u
    set people = u.people + add_people, bank_accounts = u.bank_accounts + add_bank_accounts,
        documents = u.documents + add_documents, document_bytes = u.document_bytes + add_bytes
    where u.company_id = company and u.stripe = mine and u.shared_for = wanted
      and u.people + add_people <= u.people_room and u.bank_accounts + add_bank_accounts <= u.bank_accounts_room
      and u.documents + add_documents <= u.documents_room and u.document_bytes + add_bytes <= u.document_bytes_room;
    if found then
      return true;
    end if;
    raise exception 'share spent' using errcode = 'QUOT0';
  exception when sqlstate 'QUOT0' then
    null;
  end;

  -- share out again, one create of the company at a time (a lock of its own, held to the commit): this connection's
  -- stripe is made if missing, so a company has the stripes its creates came through and no other is added meanwhile;
  -- every stripe is locked, in one order, waiting for the creates counted on it; then the sums are the company's counts
  perform pg_advisory_xact_lock(72010022, hashtext(company::text));
  insert into company_usage (company_id, stripe) values (company, mine) on conflict do nothing;
  perform 1 from company_usage u where u.company_id = company order by u.stripe for update;
  select count(*) as stripes, coalesce(sum(u.people), 0) as people, coalesce(sum(u.bank_accounts), 0) as bank_accounts,
         coalesce(sum(u.documents), 0) as documents, coalesce(sum(u.document_bytes), 0) as document_bytes
  into used from company_usage u where u.company_id = company;
  -- the domain (domain/subjects/quotas.ts) turns the SQLSTATE into the 422 naming the quota in DETAIL
  if add_people > 0 and used.people + add_people > max_people then
    raise exception 'company quota exceeded' using errcode = 'QUOTA', detail = 'people';
  elsif add_bank_accounts > 0 and used.bank_accounts + add_bank_accounts > max_bank_accounts then
    raise exception 'company quota exceeded' using errcode = 'QUOTA', detail = 'bank_accounts';
  elsif add_documents > 0 and used.documents + add_documents > max_documents then
    raise exception 'company quota exceeded' using errcode = 'QUOTA', detail = 'documents';
  elsif add_bytes > 0 and used.document_bytes + add_bytes > max_bytes then
    raise exception 'company quota exceeded' using errcode = 'QUOTA', detail = 'document_bytes';
  end if;
  spare_people := greatest(max_people - used.people - add_people, 0);
  spare_bank_accounts := greatest(max_bank_accounts - used.bank_accounts - add_bank_accounts, 0);
  spare_documents := greatest(max_documents - used.documents - add_documents, 0);
  spare_bytes := greatest(max_bytes - used.document_bytes - add_bytes, 0);
  -- this create is counted on its stripe; what is left of each quota goes to the stripes in equal shares, the
  -- remainder of the division to this one
  update company_usage u
  set people = u.people + case when u.stripe = mine then add_people else 0 end,
      bank_accounts = u.bank_accounts + case when u.stripe = mine then add_bank_accounts else 0 end,
      documents = u.documents + case when u.stripe = mine then add_documents else 0 end,
      document_bytes = u.document_bytes + case when u.stripe = mine then add_bytes else 0 end,
      people_room = u.people + spare_people / used.stripes
        + case when u.stripe = mine then add_people + spare_people % used.stripes else 0 end,
      bank_accounts_room = u.bank_accounts + spare_bank_accounts / used.stripes
        + case when u.stripe = mine then add_bank_accounts + spare_bank_accounts % used.stripes else 0 end,
      documents_room = u.documents + spare_documents / used.stripes
        + case when u.stripe = mine then add_documents + spare_documents % used.stripes else 0 end,
      document_bytes_room = u.document_bytes + spare_bytes / used.stripes
        + case when u.stripe = mine then add_bytes + spare_bytes % used.stripes else 0 end,
      shared_for = wanted
  where u.company_id = company;
  return true;
end
$$;

-- Nothing in the API deletes these rows today, but whatever does (an operator erasing a customer's data) gives the
-- room back: the counters follow deletions by themselves, once per statement however many rows it removes. The
-- company's first stripe takes the decrement (a stripe's count may go below zero; the room it frees is taken by the
-- next create there, or spread by the next sharing out).
create function company_usage_people_deleted() returns trigger language plpgsql as $$
begin
  update company_usage u set people = u.people - gone.n
  from (select company_id, count(*)::int as n from gone_rows group by company_id) gone
  where u.company_id = gone.company_id
    and u.stripe = (select min(f.stripe) from company_usage f where f.company_id = gone.company_id);
  return null;
end
$$;
create trigger people_usage_deleted after delete on people
  referencing old table as gone_rows for each statement execute function company_usage_people_deleted();

create function company_usage_bank_accounts_deleted() returns trigger language plpgsql as $$
begin
  update company_usage u set bank_accounts = u.bank_accounts - gone.n
  from (select company_id, count(*)::int as n from gone_rows where not internal group by company_id) gone
  where u.company_id = gone.company_id
    and u.stripe = (select min(f.stripe) from company_usage f where f.company_id = gone.company_id);
  return null;
end
$$;
create trigger bank_accounts_usage_deleted after delete on bank_accounts
  referencing old table as gone_rows for each statement execute function company_usage_bank_accounts_deleted();

create function company_usage_documents_deleted() returns trigger language plpgsql as $$
begin
  update company_usage u set documents = u.documents - gone.n, document_bytes = u.document_bytes - gone.bytes
  from (
    select company_id, count(*)::int as n, coalesce(sum(size), 0)::bigint as bytes from gone_rows group by company_id
  ) gone
  where u.company_id = gone.company_id
    and u.stripe = (select min(f.stripe) from company_usage f where f.company_id = gone.company_id);
  return null;
end
$$;
create trigger documents_usage_deleted after delete on documents
  referencing old table as gone_rows for each statement execute function company_usage_documents_deleted();

-- The counters start from the rows already stored, on stripe 0 with no room shared yet (the first create shares it
-- out). An instance older than this file that keeps registering during a rolling deploy does not count what it adds:
-- this statement, run again once they are all stopped, sets every company's counts from the rows (idempotent; a create
-- running at that moment may be missed, never counted twice).
with counted as (
  select c.id as company_id, coalesce(p.n, 0) as people, coalesce(a.n, 0) as bank_accounts,
         coalesce(d.n, 0) as documents, coalesce(d.bytes, 0) as document_bytes
  from companies c
  left join (select company_id, count(*)::int as n from people group by company_id) p on p.company_id = c.id
  left join (
    select company_id, count(*)::int as n from bank_accounts where not internal group by company_id
  ) a on a.company_id = c.id
  left join (
    select company_id, count(*)::int as n, coalesce(sum(size), 0)::bigint as bytes from documents group by company_id
  ) d on d.company_id = c.id
), cleared as (
  update company_usage u set people = 0, bank_accounts = 0, documents = 0, document_bytes = 0, shared_for = null
  where u.stripe <> 0
)
insert into company_usage (company_id, stripe, people, bank_accounts, documents, document_bytes)
select company_id, 0, people, bank_accounts, documents, document_bytes from counted
on conflict (company_id, stripe) do update
set people = excluded.people, bank_accounts = excluded.bank_accounts, documents = excluded.documents,
    document_bytes = excluded.document_bytes, shared_for = null;
