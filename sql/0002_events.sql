-- Every event the service emits, written in the same transaction as the state change that caused it.
-- Delivery records (one per endpoint that wants the event) hang off this table.
create table events (
  id uuid primary key,
  company_id uuid not null references companies (id),
  type text not null,
  data jsonb not null,
  inserted_at timestamptz not null default now()
);

create index events_company_idx on events (company_id, id);
