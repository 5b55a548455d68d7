-- The graphile-worker workers of each running process, tied to a database session the process holds open.
-- When the process dies its session ends; the jobs its workers had locked are then freed at once
-- instead of after graphile-worker's 4-hour lock expiry.
create table worker_processes (
  worker_id text primary key,
  backend_pid integer not null,
  backend_start timestamptz not null,
  inserted_at timestamptz not null default now()
);
