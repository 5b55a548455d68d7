-- Per-endpoint health (docs/webhooks.md, "Endpoint health"): an aggregate kept by the statement that records
-- attempts (domain/webhooks/engine/statements/record.ts), so that the stats of an endpoint are read from a bounded
-- number of rows whatever the number of attempts behind them, never by scanning the attempts.
--
-- Rows per endpoint and UTC minute in which it had attempts: counts by outcome
-- (domain/webhooks/endpoints/attempt_stats.ts, `OUTCOMES`) and a histogram of durations in fixed logarithmic buckets,
-- `d0` to `d49` (`DURATION_BUCKETS` there), from which p50 and p95 over any span of minutes are computed by summing the
-- rows. The buckets are columns, not an array: summing 50 subscripts of an array over the 43,200 minutes of 30 days
-- took 105 ms here, 50 columns about 20.
--
-- A batch of attempts adds to its endpoints' rows once each (the recorder tallies the batch first). A row written is
-- locked until its statement commits (synchronously), so batches of one endpoint written at the same time would wait
-- for each other on a single row: `shard` spreads them over up to 4 rows per minute (and 4 last-outcome rows), each
-- statement taking the next shard in turn (domain/webhooks/engine/statements/record_stats.ts), and reads sum them. Rows
-- past the history retention are deleted with the rest of the history (domain/webhooks/endpoints/retention.ts).
create table webhook_endpoint_stats (
  endpoint_id uuid not null references webhook_endpoints (id) on delete cascade,
  bucket timestamptz not null,
  shard smallint not null,
  company_id uuid not null,
  succeeded integer not null default 0,
  http_3xx integer not null default 0,
  http_4xx integer not null default 0,
  http_5xx integer not null default 0,
  timeout integer not null default 0,
  network integer not null default 0,
  refused integer not null default 0,
  primary key (endpoint_id, bucket, shard)
) with (fillfactor = 80); -- room for the row's next versions on its page: updates stay HOT (no index changes)

do $$
begin
  for k in 0..49 loop
    execute format('alter table webhook_endpoint_stats add column %I integer not null default 0', 'd' || k);
  end loop;
end
$$;

-- retention: the oldest minutes first
create index webhook_endpoint_stats_bucket_idx on webhook_endpoint_stats (bucket);

-- When the endpoint last had an attempt succeed and one fail, and why the last failure failed (the record's
-- `last_error`, `failureReason` of domain/webhooks/endpoints/decisions.ts): a small row per endpoint and shard (above),
-- kept for the life of the endpoint; reads take the latest of its rows.
create table webhook_endpoint_health (
  endpoint_id uuid not null references webhook_endpoints (id) on delete cascade,
  shard smallint not null,
  company_id uuid not null,
  last_success_at timestamptz,
  last_failure_at timestamptz,
  last_failure_reason text,
  primary key (endpoint_id, shard)
);
