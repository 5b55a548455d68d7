/**
 * An endpoint's stats with 1,000,000 attempts behind them (`BENCH_ONLY=stats`): GET .../stats reads the health
 * aggregate (sql/0027), and this times that read against the same figures computed by scanning the attempt log.
 *
 * The history is seeded with set-based SQL, as the service writes it: 250,000 delivery records of one endpoint over
 * the last 24 hours with 4 attempts each (90% 2xx, then 503, 404, timeouts and network failures; durations from 2 ms
 * to about 2 s, skewed short), in the month of day partitions a service at the default retention has. The aggregate is
 * then filled from that log by one statement that counts what the record statement counts (the outcome classes and
 * the duration buckets of domain/webhooks/endpoints/attempt_stats.ts, written in SQL) per minute; the run checks that its totals
 * and percentiles agree with the log's before timing anything. The 29 days before hold aggregate rows only (a few
 * attempts every minute), so that a read of the whole retention meets as many rows as a busy endpoint has.
 *
 * Times `endpointStats` (the route's whole database part and its presentation) since 1 hour, 24 hours and 30 days
 * ago, in the same rounds so that a pause of the machine falls on each alike, and the scan of the log since 24 hours
 * ago. Then the minutes past a day are rolled into hours (`rollUpStats`, sql/0032, as the hourly retention job does),
 * the 30-day read is checked to give the same totals, and the 30-day and 24-hour reads are timed again. Measures only.
 */
import { setLogLevel } from "../../domain/basics/log.ts";
import { connect, type Sql } from "../../domain/infra/db.ts";
import { migrate } from "../../domain/infra/migrate.ts";
import { DURATION_BUCKETS, DURATION_COLUMNS } from "../../domain/webhooks/endpoints/attempt_stats.ts";
import { endpointStats, minuteOf, rollUpStats } from "../../domain/webhooks/endpoints/stats.ts";
import { STATS_SHARDS } from "../../domain/webhooks/engine/statements/record.ts";
import { dropDatabase, freshDatabase } from "../support/helpers.ts";
import { type Figures, round } from "./figures.ts";
import { A_MONTH, partitionPastDays } from "./partitions.ts";

const ATTEMPTS = Number(Deno.env.get("BENCH_STATS_ATTEMPTS") ?? 1_000_000);
const PER_RECORD = 4;
const RUNS = Number(Deno.env.get("BENCH_STATS_RUNS") ?? 1000);
const WARM_UP = Math.ceil(RUNS / 10);
/** Reads of the whole retention, each about 40 times a day's: fewer of them. */
const LONG_RUNS = Math.ceil(RUNS / 10);
const SCAN_RUNS = Number(Deno.env.get("BENCH_STATS_SCAN_RUNS") ?? 5);

const COMPANY = "11111111-1111-4111-8111-111111111111";
const ENDPOINT = "33333333-3333-4333-8333-333333333331";
const HOUR = 3_600_000;

/** The log: records of ENDPOINT and their attempts over the last 24 hours. */
async function seedLog(sql: Sql) {
  const records = Math.ceil(ATTEMPTS / PER_RECORD);
  await sql`
    insert into webhook_deliveries (id, company_id, event_id, endpoint_id, type, status, attempts, schedule_attempts,
                                    inserted_at, updated_at)
    select uuid_v7(), ${COMPANY}, gen_random_uuid(), ${ENDPOINT}, 'identified', 'succeeded', ${PER_RECORD},
           ${PER_RECORD}, at, at
    from (select now() - make_interval(secs => 86390 * (1 - i::float8 / ${records})) as at
          from generate_series(1, ${records}::int) as i) t`;
  await sql`
    insert into webhook_attempts (id, delivery_id, company_id, attempt_number, http_status, response_body, duration_ms,
                                  inserted_at)
    select uuid_v7(), d.id, d.company_id, n, s.status, s.body, (2 + 2000 * power(random(), 6))::int,
           d.inserted_at + make_interval(secs => n)
    from webhook_deliveries d cross join generate_series(1, ${PER_RECORD}) as n
    cross join lateral (select random() as r, n as k) x
    cross join lateral (
      select case when x.r < 0.90 then 200 when x.r < 0.95 then 503 when x.r < 0.98 then 404 else 0 end as status,
             case when x.r < 0.90 then 'ok' when x.r < 0.98 then 'no'
                  when x.r < 0.99 then 'timeout after 10000 ms' else 'connection refused (ECONNREFUSED)' end as body
    ) s
    where d.endpoint_id = ${ENDPOINT}`;
  await sql`vacuum analyze webhook_deliveries`;
  await sql`vacuum analyze webhook_attempts`;
}

/** What the record statement counts, per endpoint and minute, from the log (attempt_stats.ts, in SQL). */
async function fillAggregate(sql: Sql) {
  const buckets = sql.unsafe(DURATION_COLUMNS.join(", "));
  const fromArray = sql.unsafe(DURATION_COLUMNS.map((_, k) => `h.durations[${k + 1}]`).join(", "));
  await sql`
    with a as (
      -- a busy minute holds several batches, spread over the shards (recordStats, record.ts): here, all of them
      select d.endpoint_id, d.company_id, date_trunc('minute', a.inserted_at) as minute,
        abs(hashtext(a.id::text)) % ${STATS_SHARDS} as shard, a.http_status, a.response_body,
        case when a.duration_ms < 1 then 0
             else least(${DURATION_BUCKETS - 1}, floor(3 * log(2, a.duration_ms::numeric) + 1e-9)::int + 1) end as k
      from webhook_attempts a join webhook_deliveries d on d.id = a.delivery_id
      where d.company_id = ${COMPANY} and d.endpoint_id = ${ENDPOINT}
    ), per_bucket as (
      select endpoint_id, minute, shard, k, count(*)::int as n from a group by 1, 2, 3, 4
    ), histograms as (
      select m.endpoint_id, m.minute, m.shard, array_agg(coalesce(p.n, 0) order by k.k) as durations
      from (select distinct endpoint_id, minute, shard from per_bucket) m
      cross join generate_series(0, ${DURATION_BUCKETS - 1}) as k(k)
      left join per_bucket p on p.endpoint_id = m.endpoint_id and p.minute = m.minute and p.shard = m.shard
        and p.k = k.k
      group by 1, 2, 3
    ), counts as (
      select endpoint_id, company_id, minute, shard,
        count(*) filter (where http_status between 200 and 299) as succeeded,
        count(*) filter (where http_status between 1 and 399 and http_status not between 200 and 299) as http_3xx,
        count(*) filter (where http_status between 400 and 499) as http_4xx,
        count(*) filter (where http_status >= 500) as http_5xx,
        count(*) filter (where http_status = 0 and response_body like 'timeout%') as timeout,
        count(*) filter (where http_status = 0 and response_body not like 'timeout%'
                           and response_body not like 'refused%') as network,
        count(*) filter (where http_status = 0 and response_body like 'refused%') as refused
      from a group by 1, 2, 3, 4
    )
    insert into webhook_endpoint_stats (endpoint_id, bucket, shard, company_id, succeeded, http_3xx, http_4xx,
                                        http_5xx, timeout, network, refused, ${buckets})
    select c.endpoint_id, c.minute, c.shard, c.company_id, c.succeeded, c.http_3xx, c.http_4xx, c.http_5xx, c.timeout,
      c.network, c.refused, ${fromArray}
    from counts c join histograms h using (endpoint_id, minute, shard)`;
  // the 29 days before: a few attempts a minute (a batch, one row), aggregate only
  await sql`
    insert into webhook_endpoint_stats (endpoint_id, bucket, shard, company_id, succeeded, http_5xx, d15, d25)
    select ${ENDPOINT}, m, 0, ${COMPANY}, 9, 1, 8, 2
    from generate_series(date_trunc('minute', now() - interval '30 days'),
                         (select min(bucket) from webhook_endpoint_stats) - interval '1 minute',
                         interval '1 minute') as m`;
  await sql`insert into webhook_endpoint_health (endpoint_id, shard, company_id, last_success_at, last_failure_at,
                                                 last_failure_reason)
            values (${ENDPOINT}, 0, ${COMPANY}, now(), now() - interval '1 second', 'HTTP 503')`;
  await sql`vacuum analyze webhook_endpoint_stats`;
  await sql`checkpoint`.catch(() => {});
}

/**
 * The same figures from the attempt log, the attempts from the start of `since`'s minute as the aggregate counts
 * them: what a read costs without the aggregate. A record's attempts are made within seconds of it.
 */
async function scanLog(sql: Sql, since: Date) {
  const from = minuteOf(since);
  const [row] = await sql`
    select count(*) as total,
      count(*) filter (where a.http_status between 200 and 299) as succeeded,
      count(*) filter (where a.http_status = 0 and a.response_body like 'timeout%') as timeout,
      percentile_disc(0.5) within group (order by a.duration_ms) as p50,
      percentile_disc(0.95) within group (order by a.duration_ms) as p95,
      max(a.inserted_at) filter (where a.http_status between 200 and 299) as last_success_at
    from webhook_deliveries d join webhook_attempts a on a.delivery_id = d.id
    where d.company_id = ${COMPANY} and d.endpoint_id = ${ENDPOINT}
      and d.inserted_at >= ${new Date(from.getTime() - 60_000)}
      and a.company_id = ${COMPANY} and a.inserted_at >= ${from}`;
  return { total: Number(row.total), succeeded: Number(row.succeeded), p50: row.p50, p95: row.p95 };
}

function percentiles(times: number[]) {
  times.sort((a, b) => a - b);
  return { p50: times[Math.floor(times.length / 2)], p99: times[Math.ceil(times.length * 0.99) - 1] };
}

export async function benchEndpointStats(): Promise<Figures> {
  setLogLevel("silent");
  const url = await freshDatabase("bench_endpoint_stats");
  const sql = connect(url, { max: 2 });
  try {
    await migrate(sql, url);
    await partitionPastDays(sql, A_MONTH);
    await sql`insert into companies (id) values (${COMPANY})`;
    await sql`insert into webhook_endpoints (id, company_id, url, sealed_secret)
              values (${ENDPOINT}, ${COMPANY}, 'http://127.0.0.1:9/bench', 'unused')`;
    const seeding = performance.now();
    await seedLog(sql);
    const seedSeconds = (performance.now() - seeding) / 1000;
    const filling = performance.now();
    await fillAggregate(sql);
    const fillSeconds = (performance.now() - filling) / 1000;

    const now = Date.now();
    const spans = { "1h": new Date(now - HOUR), "24h": new Date(now - 24 * HOUR), "30d": new Date(now - 720 * HOUR) };
    // the aggregate agrees with the log it was filled from, before anything is timed
    const day = await endpointStats(sql, COMPANY, ENDPOINT, spans["24h"]);
    const logged = await scanLog(sql, spans["24h"]);
    if (day.attempts.total !== logged.total || day.attempts.succeeded !== logged.succeeded) {
      throw new Error(`the aggregate counts ${JSON.stringify(day.attempts)}, the log ${JSON.stringify(logged)}`);
    }

    const times: Record<string, number[]> = { "1h": [], "24h": [], "30d": [] };
    for (let run = 0; run < WARM_UP + RUNS; run++) {
      for (const [span, since] of Object.entries(spans)) {
        if (span === "30d" && run % (RUNS / LONG_RUNS) !== 0) continue;
        const t = performance.now();
        await endpointStats(sql, COMPANY, ENDPOINT, since);
        if (run >= WARM_UP) times[span].push(performance.now() - t);
      }
    }
    const scans: number[] = [];
    for (let run = 0; run < SCAN_RUNS + 1; run++) {
      const t = performance.now();
      await scanLog(sql, spans["24h"]);
      if (run > 0) scans.push(performance.now() - t); // the first warms the cache
    }
    const [{ rows }] = await sql<{ rows: number }[]>`
      select count(*)::int as rows from webhook_endpoint_stats where endpoint_id = ${ENDPOINT}`;

    // the same reads once the minutes past a day are summed in hours
    const monthFromMinutes = await endpointStats(sql, COMPANY, ENDPOINT, spans["30d"]);
    const rolling = performance.now();
    const hoursRolled = await rollUpStats(sql);
    const rollSeconds = (performance.now() - rolling) / 1000;
    const monthFromHours = await endpointStats(sql, COMPANY, ENDPOINT, spans["30d"]);
    if (JSON.stringify(monthFromHours.attempts) !== JSON.stringify(monthFromMinutes.attempts)) {
      throw new Error(`rolled ${JSON.stringify(monthFromHours.attempts)}, minutes ${JSON.stringify(monthFromMinutes)}`);
    }
    const rolled: Record<string, number[]> = { "24h": [], "30d": [] };
    for (let run = 0; run < WARM_UP + LONG_RUNS; run++) {
      for (const span of ["24h", "30d"] as const) {
        const t = performance.now();
        await endpointStats(sql, COMPANY, ENDPOINT, spans[span]);
        if (run >= WARM_UP) rolled[span].push(performance.now() - t);
      }
    }
    const afterRollUp = Object.fromEntries(Object.entries(rolled).map(([span, list]) => [span, percentiles(list)]));
    const read = Object.fromEntries(Object.entries(times).map(([span, list]) => [span, percentiles(list)]));
    const scan = percentiles(scans);
    console.log(
      `\nEndpoint stats, ${day.attempts.total} attempts in the last 24 h (${rows} rows over 30 days); ` +
        `p50 / p99 of ${RUNS} reads (${LONG_RUNS} since 30 days ago), ms:`,
    );
    for (const [span, p] of Object.entries(read)) {
      console.log(
        `aggregate since ${span.padEnd(4)} ${p.p50.toFixed(2).padStart(8)} / ${p.p99.toFixed(2).padStart(8)}`,
      );
    }
    console.log(
      `log scan since 24h  ${scan.p50.toFixed(2).padStart(8)} / ${
        scan.p99.toFixed(2).padStart(8)
      } (${SCAN_RUNS} scans)`,
    );
    console.log(
      `rolled ${hoursRolled} hours in ${rollSeconds.toFixed(1)} s; then, from hours past a day (${LONG_RUNS} reads):`,
    );
    for (const [span, p] of Object.entries(afterRollUp)) {
      console.log(
        `aggregate since ${span.padEnd(4)} ${p.p50.toFixed(2).padStart(8)} / ${p.p99.toFixed(2).padStart(8)}`,
      );
    }
    console.log(
      `p50 / p95 of the durations (ms): aggregate ${day.duration_ms.p50} / ${day.duration_ms.p95}, ` +
        `log (exact) ${logged.p50} / ${logged.p95}`,
    );
    return {
      stats_attempts: day.attempts.total,
      stats_seed_s: round(seedSeconds, 1),
      stats_fill_s: round(fillSeconds, 1),
      stats_rows: rows,
      stats_read_1h_p50_ms: round(read["1h"].p50, 2),
      stats_read_1h_p99_ms: round(read["1h"].p99, 2),
      stats_read_24h_p50_ms: round(read["24h"].p50, 2),
      stats_read_24h_p99_ms: round(read["24h"].p99, 2),
      stats_read_30d_p50_ms: round(read["30d"].p50, 2),
      stats_read_30d_p99_ms: round(read["30d"].p99, 2),
      stats_hours_rolled: hoursRolled,
      stats_rollup_s: round(rollSeconds, 1),
      stats_read_30d_hours_p50_ms: round(afterRollUp["30d"].p50, 2),
      stats_read_30d_hours_p99_ms: round(afterRollUp["30d"].p99, 2),
      stats_read_24h_hours_p50_ms: round(afterRollUp["24h"].p50, 2),
      stats_log_scan_24h_p50_ms: round(scan.p50, 1),
      stats_log_scan_24h_p99_ms: round(scan.p99, 1),
      stats_p95_aggregate_ms: day.duration_ms.p95 ?? NaN,
      stats_p95_log_ms: Number(logged.p95),
    };
  } finally {
    await sql.end();
    await dropDatabase(url);
  }
}
