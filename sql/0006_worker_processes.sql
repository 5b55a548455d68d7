-- Each running worker process, tied to a database session it holds open for its whole life. When the process dies
-- its session ends; the jobs its graphile workers had locked, and the webhook leases it held, are then freed at once
-- instead of after graphile-worker's 4-hour lock expiry or the lease timeout.
create table worker_processes (
  id uuid primary key,
  backend_pid integer not null,
  backend_start timestamptz not null,
  worker_ids text[] not null default '{}',
  inserted_at timestamptz not null default now()
);
