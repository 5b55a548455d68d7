import type { Sql } from "../infra/db.ts";
import { notFound } from "../basics/errors.ts";
import { isoUtc, isoUtcOrNull, pgTimestamptz } from "../basics/time.ts";
import { DURATION_COLUMNS, durationQuantile, type Outcome, OUTCOMES } from "./attempt_stats.ts";

/**
 * An endpoint's health since an instant (docs/webhooks.md, "Endpoint health"), read from the aggregate the record
 * statement keeps (sql/0027, delivery/record_stats.ts): its minute rows from `since` on, summed, and its last success
 * and failure. At most `STATS_SHARDS` rows per minute of the span are read, however many attempts they count.
 */

/** How far back the stats go when the caller names no instant. */
export const DEFAULT_STATS_HOURS = 24;

export type EndpointStats = {
  endpoint_id: string;
  since: string;
  attempts: { total: number; failed: number } & Record<Outcome, number>;
  success_rate: number | null;
  duration_ms: { p50: number | null; p95: number | null };
  last_success_at: string | null;
  last_failure: { at: string; reason: string | null } | null;
};

type StatsRow = Record<Outcome, string> & {
  durations: string[];
  last_success_at: Date | null;
  last_failure_at: Date | null;
  last_failure_reason: string | null;
};

/** The minute an instant falls in: the stats are kept by minute, so they count from its start. */
export function minuteOf(at: Date): Date {
  return new Date(Math.floor(at.getTime() / 60_000) * 60_000);
}

/** 404 for an endpoint of another company, or none; `since` defaults to `DEFAULT_STATS_HOURS` ago. */
export async function endpointStats(
  sql: Sql,
  companyId: string,
  endpointId: string,
  since: Date = new Date(Date.now() - DEFAULT_STATS_HOURS * 3_600_000),
): Promise<EndpointStats> {
  const from = minuteOf(since);
  // the histogram's buckets summed column by column (named by code, never by input)
  const histogram = sql.unsafe(DURATION_COLUMNS.map((c) => `coalesce(sum(s.${c}), 0)`).join(", "));
  const [row] = await sql<StatsRow[]>`
    select h.*, m.*
    from webhook_endpoints e
    cross join lateral (
      -- the latest of the endpoint's last-outcome rows (one per shard, sql/0027)
      select max(h.last_success_at) as last_success_at, max(h.last_failure_at) as last_failure_at,
        (array_agg(h.last_failure_reason order by h.last_failure_at desc nulls last))[1] as last_failure_reason
      from webhook_endpoint_health h where h.endpoint_id = e.id and h.company_id = e.company_id
    ) h
    cross join lateral (
      select coalesce(sum(s.succeeded), 0) as succeeded, coalesce(sum(s.http_3xx), 0) as http_3xx,
        coalesce(sum(s.http_4xx), 0) as http_4xx, coalesce(sum(s.http_5xx), 0) as http_5xx,
        coalesce(sum(s.timeout), 0) as timeout, coalesce(sum(s.network), 0) as network,
        coalesce(sum(s.refused), 0) as refused, array[${histogram}]::text[] as durations
      from webhook_endpoint_stats s
      where s.endpoint_id = e.id and s.company_id = e.company_id and s.bucket >= ${
    pgTimestamptz(from)
  }::text::timestamptz
    ) m
    where e.company_id = ${companyId} and e.id = ${endpointId}`;
  if (!row) throw notFound();
  return presentStats(endpointId, from, row);
}

function presentStats(endpointId: string, from: Date, row: StatsRow): EndpointStats {
  const counts = Object.fromEntries(OUTCOMES.map((o) => [o, Number(row[o])])) as Record<Outcome, number>;
  const total = OUTCOMES.reduce((sum, o) => sum + counts[o], 0);
  const histogram = row.durations.map(Number);
  return {
    endpoint_id: endpointId,
    since: isoUtc(from),
    attempts: { total, failed: total - counts.succeeded, ...counts },
    success_rate: total === 0 ? null : Math.round((counts.succeeded / total) * 10_000) / 10_000,
    duration_ms: { p50: durationQuantile(histogram, 0.5), p95: durationQuantile(histogram, 0.95) },
    last_success_at: isoUtcOrNull(row.last_success_at),
    last_failure: row.last_failure_at ? { at: isoUtc(row.last_failure_at), reason: row.last_failure_reason } : null,
  };
}
