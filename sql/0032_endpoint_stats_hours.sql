set local lock_timeout = '5s';

-- Endpoint health over long spans (docs/webhooks.md, "How the stats are kept"): the minute rows of sql/0027 summed
-- per endpoint and UTC hour once the hour is more than a day old (`rollUpStats`, domain/webhooks/endpoints/stats.ts,
-- run by the hourly retention job), so a read since 30 days ago sums about 720 hour rows and a day of minutes instead
-- of up to 172,800 minute rows. Same columns as the minute rows; one row per endpoint and hour (a single writer makes
-- them, so no shards).
--
-- Expand only: the minute rows stay as they are, written and read by the release before this one, and go with the
-- history's retention as before; a read of this release takes the hours before `rolled_until` and the minutes after.
-- 32-bit counts on purpose (squawk's prefer-bigint-over-int, docs/migrations.md): an hour row counts one endpoint's
-- attempts in one hour, far below 2^31 at any rate the service reaches, and is summed as the minute rows of sql/0027.
-- squawk-ignore-file prefer-bigint-over-int
create table webhook_endpoint_stats_hourly (
  endpoint_id uuid not null references webhook_endpoints (id) on delete cascade,
  bucket timestamptz not null,
  company_id uuid not null,
  succeeded integer not null default 0,
  http_3xx integer not null default 0,
  http_4xx integer not null default 0,
  http_5xx integer not null default 0,
  timeout integer not null default 0,
  network integer not null default 0,
  refused integer not null default 0,
  primary key (endpoint_id, bucket)
);

do $$
begin
  for k in 0..49 loop
    execute format('alter table webhook_endpoint_stats_hourly add column %I integer not null default 0', 'd' || k);
  end loop;
end
$$;

-- retention: the oldest hours first
create index webhook_endpoint_stats_hourly_bucket_idx on webhook_endpoint_stats_hourly (bucket);

-- How far the minutes have been rolled into hours: every minute row before `rolled_until` (an hour boundary) is
-- counted in an hour row, and none after it. One row; null until the first rollup.
create table webhook_endpoint_stats_rollup (
  single boolean primary key default true check (single),
  rolled_until timestamptz
);
insert into webhook_endpoint_stats_rollup (single) values (true);
