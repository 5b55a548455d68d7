set local lock_timeout = '5s';

-- Test clocks of the sandbox (docs/sandbox.md, "Test clocks"): a time of the company's own that only moves when it is
-- advanced, and the subscriptions and PIX charges created on one. Advancing a clock runs, in one transaction, every
-- step of what is on it that falls due up to the new time (domain/rails/test_clocks.ts).
create table test_clocks (
  id uuid primary key,
  company_id uuid not null references companies (id),
  name text not null default '',
  frozen_time timestamptz not null,
  inserted_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

create index test_clocks_company_idx on test_clocks (company_id, id);

-- A subscription created on a clock: what its schedule needs beside the subscription's own row (cycles, paid_cycles,
-- status). Its own table rather than columns of `subscriptions`, so that no index has to be built on a table in use
-- (docs/migrations.md, "Indexes on tables in use"), and so that deleting a clock takes its schedules with it while the
-- subscriptions and their invoices stay. Cycle n falls due n intervals after `anchor`, the clock's time at creation.
create table test_clock_subscriptions (
  subscription_id uuid primary key references subscriptions (id),
  company_id uuid not null references companies (id),
  test_clock_id uuid not null references test_clocks (id) on delete cascade,
  billing_interval text not null check (billing_interval in ('day', 'week', 'month', 'year')),
  anchor timestamptz not null,
  -- a cycle number, at most 1200 as `subscriptions.cycles` (an integer too): 32 bits are plenty
  -- squawk-ignore prefer-bigint-over-int
  fail_at_cycle integer check (fail_at_cycle > 0),
  inserted_at timestamptz not null default now()
);

create index test_clock_subscriptions_clock_idx on test_clock_subscriptions (test_clock_id, subscription_id);

-- A PIX charge created on a clock: it expires unpaid when the clock reaches `expires_at`. Its own table for the same
-- reasons as the subscriptions'.
create table test_clock_pix_charges (
  pix_charge_id uuid primary key references pix_charges (id),
  company_id uuid not null references companies (id),
  test_clock_id uuid not null references test_clocks (id) on delete cascade,
  expires_at timestamptz not null,
  inserted_at timestamptz not null default now()
);

create index test_clock_pix_charges_clock_idx on test_clock_pix_charges (test_clock_id, pix_charge_id);
