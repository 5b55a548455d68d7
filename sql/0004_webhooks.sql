-- Webhook endpoints of a company (v2). Never deleted: DELETE disables them, so delivery history keeps its endpoint.
create table webhook_endpoints (
  id uuid primary key,
  company_id uuid not null references companies (id),
  url text not null,
  status text not null default 'active' check (status in ('active', 'disabled')),
  enabled_events text[] not null default array['*'],
  delivery_mode text not null default 'parallel' check (delivery_mode in ('parallel', 'sequential')),
  event_payload_type text not null default 'snapshot' check (event_payload_type in ('snapshot', 'thin')),
  inject_secret_in_body boolean not null default false,
  wrap_in_notification boolean not null default false,
  max_concurrency integer not null default 10 check (max_concurrency between 1 and 100),
  event_mapping jsonb,
  secret text not null,
  previous_secret text,
  previous_secret_expires_at timestamptz,
  inserted_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

create index webhook_endpoints_company_idx on webhook_endpoints (company_id, id);
-- emitEvent looks up the active endpoints of a company for every event.
create index webhook_endpoints_active_idx on webhook_endpoints (company_id) where status = 'active';

-- The concurrency semaphore of each endpoint, shared by every worker process: a delivery in flight leases one
-- row until `leased_until`. A lease (not a lock held by a connection) so a crashed process frees its slots by
-- itself once they expire. Rows 0..max_concurrency-1 exist; sequential endpoints use slot 0 only.
create table webhook_slots (
  endpoint_id uuid not null references webhook_endpoints (id),
  slot integer not null,
  delivery_id uuid,
  leased_until timestamptz,
  primary key (endpoint_id, slot)
);

-- One record per (event, endpoint that wanted it): what the events API lists, acknowledges and retries.
create table webhook_deliveries (
  id uuid primary key,
  company_id uuid not null references companies (id),
  event_id uuid not null references events (id),
  endpoint_id uuid not null references webhook_endpoints (id),
  type text not null,
  status text not null default 'pending' check (status in ('pending', 'succeeded', 'failed')),
  -- Every attempt ever made (numbers the attempts) and those of the current schedule (a manual retry resets it).
  attempts integer not null default 0,
  schedule_attempts integer not null default 0,
  -- When the next attempt is due; null once the record is no longer pending.
  next_attempt_at timestamptz,
  -- Set while an attempt is in flight; a record whose lease ran out (crashed worker) may be claimed again.
  lease_token uuid,
  leased_until timestamptz,
  -- The drain job emitEvent added for this record, if any: whoever leases the record first deletes that job while
  -- it is still queued, since there is nothing left for it to do.
  wake_job_id bigint,
  inserted_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
-- Room on each page so that leasing a record (columns outside every index) is a HOT update.
) with (fillfactor = 80);

create index webhook_deliveries_company_idx on webhook_deliveries (company_id, inserted_at, id);
-- Parallel endpoints take the pending record that is due first; sequential ones the oldest pending record.
create index webhook_deliveries_due_idx on webhook_deliveries (endpoint_id, next_attempt_at, id) where status = 'pending';
create index webhook_deliveries_head_idx on webhook_deliveries (endpoint_id, id) where status = 'pending';

-- Written by the delivery workers only, always for a record they hold (no foreign keys: they would lock the record
-- and the company row for every attempt).
create table webhook_attempts (
  id uuid primary key,
  delivery_id uuid not null,
  company_id uuid not null,
  attempt_number integer not null,
  http_status integer not null,
  response_body text not null,
  duration_ms integer not null,
  inserted_at timestamptz not null default now()
);

create index webhook_attempts_delivery_idx on webhook_attempts (delivery_id, attempt_number);
