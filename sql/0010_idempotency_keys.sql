-- Idempotency-Key on POST requests (README, "Idempotency-Key"). A row is a company's claim on a key: it is inserted
-- before the handler runs, so two requests with the same key cannot both execute, and it holds the first answer once
-- the handler has finished. `response_status` is null while the first request is still running; `locked_at` lets a
-- claim left by a process that crashed expire. Rows go 24 hours after `inserted_at` (pruned in bounded batches).
create table idempotency_keys (
  company_id uuid not null,
  key text not null,
  -- SHA-256 of the method, path and raw body of the request that claimed the key
  request_hash bytea not null,
  -- the claim's owner: only the request that claimed the key stores its answer or releases it
  claim_id uuid not null,
  locked_at timestamptz not null default now(),
  response_status int,
  response_content_type text,
  response_body bytea,
  inserted_at timestamptz not null default now(),
  primary key (company_id, key)
);

create index idempotency_keys_inserted_at on idempotency_keys (inserted_at);
