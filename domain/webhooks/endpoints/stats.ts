/**
 * An endpoint's health since an instant (docs/webhooks.md, "Endpoint health"), read from the aggregate the record
 * statement keeps (sql/0027, engine/statements/record.ts): its minute rows from `since` on, summed, and its last success
 * and failure. At most `STATS_SHARDS` rows per minute of the span are read, however many attempts they count; past a
 * day, the minutes are rolled into hour rows (sql/0032, `rollUpStats`), so a month's read sums hours.
 */

import type { Sql } from "../../infra/db.ts";
import { notFound } from "../../basics/errors.ts";
import { isoUtc, isoUtcOrNull, pgTimestamptz } from "../../basics/time.ts";
import { DURATION_COLUMNS, durationQuantile, type Outcome, OUTCOMES } from "./attempt_stats.ts";

/** How far back the stats go when the caller names no instant. */
export const DEFAULT_STATS_HOURS = 24;
/** Minutes are rolled into their hour once the hour ended this long ago (no attempt is recorded so late). */
export const ROLL_UP_AFTER_HOURS = 24;

/** The counted columns of a minute or hour row, named by code (attempt_stats.ts), never by input. */
const COUNTED = [...OUTCOMES, ...DURATION_COLUMNS, "batch_requests", "batched_events"];

export type EndpointStats = {
  endpoint_id: string;
  since: string;
  /** Attempts per event: a batch's request counts once for every record it carried. */
  attempts: { total: number; failed: number } & Record<Outcome, number>;
  /** Requests made: `total` (a batch's counting once), of which `batches` carried batches (docs/webhooks.md, "Batches"). */
  requests: { total: number; batches: number };
  success_rate: number | null;
  duration_ms: { p50: number | null; p95: number | null };
  last_success_at: string | null;
  last_failure: { at: string; reason: string | null } | null;
};

type StatsRow = Record<Outcome, string> & {
  batch_requests: string;
  batched_events: string;
  durations: string[];
  last_success_at: Date | null;
  last_failure_at: Date | null;
  last_failure_reason: string | null;
};

/** The minute an instant falls in: the stats are kept by minute, so they count from its start. */
export function minuteOf(at: Date): Date {
  return new Date(Math.floor(at.getTime() / 60_000) * 60_000);
}

/** The first hour that starts at or after an instant. */
function hourAfter(at: Date): Date {
  return new Date(Math.ceil(at.getTime() / 3_600_000) * 3_600_000);
}

/**
 * 404 for an endpoint of another company, or none; `since` defaults to `DEFAULT_STATS_HOURS` ago.
 *
 * The span is read in three index ranges, W being the rollup's `rolled_until` (-infinity before the first): the
 * minutes of `since`'s partial hour that lie before W, the hours from the next whole hour to W, and the minutes from
 * W (or `since`, when later) on. Each minute is counted once, from its minute row or from its hour's row.
 */
export async function endpointStats(
  sql: Sql,
  companyId: string,
  endpointId: string,
  since: Date = new Date(Date.now() - DEFAULT_STATS_HOURS * 3_600_000),
): Promise<EndpointStats> {
  const from = minuteOf(since);
  const fromText = pgTimestamptz(from);
  const fromHour = pgTimestamptz(hourAfter(from));
  // the histogram's buckets summed column by column (named by code, never by input)
  const histogram = sql.unsafe(DURATION_COLUMNS.map((c) => `coalesce(sum(s.${c}), 0)`).join(", "));
  const counted = sql.unsafe(COUNTED.map((c) => `s.${c}`).join(", "));
  // the ids as parameters, not e's columns: each range is planned on the primary key's (endpoint_id, bucket)
  const ofEndpoint = sql`s.endpoint_id = ${endpointId} and s.company_id = ${companyId}`;
  const [row] = await sql<StatsRow[]>`
    select h.*, m.*
    from webhook_endpoints e
    cross join (
      select coalesce(rolled_until, '-infinity') as until from webhook_endpoint_stats_rollup
    ) w
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
        coalesce(sum(s.refused), 0) as refused, array[${histogram}]::text[] as durations,
        coalesce(sum(s.batch_requests), 0) as batch_requests, coalesce(sum(s.batched_events), 0) as batched_events
      from (
        select ${counted} from webhook_endpoint_stats s
        where ${ofEndpoint} and s.bucket >= ${fromText}::text::timestamptz
          and s.bucket < least(${fromHour}::text::timestamptz, w.until)
        union all
        select ${counted} from webhook_endpoint_stats_hourly s
        where ${ofEndpoint} and s.bucket >= ${fromHour}::text::timestamptz and s.bucket < w.until
        union all
        select ${counted} from webhook_endpoint_stats s
        where ${ofEndpoint} and s.bucket >= greatest(${fromText}::text::timestamptz, w.until)
      ) s
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
    requests: {
      total: total - Number(row.batched_events) + Number(row.batch_requests),
      batches: Number(row.batch_requests),
    },
    success_rate: total === 0 ? null : Math.round((counts.succeeded / total) * 10_000) / 10_000,
    duration_ms: { p50: durationQuantile(histogram, 0.5), p95: durationQuantile(histogram, 0.95) },
    last_success_at: isoUtcOrNull(row.last_success_at),
    last_failure: row.last_failure_at ? { at: isoUtc(row.last_failure_at), reason: row.last_failure_reason } : null,
  };
}

/**
 * Rolls the minute rows of every endpoint into hour rows (sql/0032), one hour a transaction, oldest first, up to the
 * hour that ended `ROLL_UP_AFTER_HOURS` ago by the database's clock; answers how many hours it rolled. The rollup row
 * is locked by each step, so two runs at once take turns; reads see an hour in its minutes or in its hour row, never
 * both and never neither (`rolled_until` moves in the transaction that writes the hour). The minute rows stay: the
 * release before this one reads them (they go with the history's retention).
 */
export async function rollUpStats(sql: Sql, afterHours = ROLL_UP_AFTER_HOURS): Promise<number> {
  const sums = sql.unsafe(COUNTED.map((c) => `sum(${c})`).join(", "));
  const columns = sql.unsafe(COUNTED.join(", "));
  for (let hours = 0;; hours++) {
    const rolled = await sql.begin(async (tx) => {
      // the next hour with minutes to roll, skipping empty ones, and the last hour that may be rolled
      const [step] = await tx<{ next: string | null; target: string; done: boolean }[]>`
        select n.next::text, t.target::text, n.next is null or n.next >= t.target as done
        from webhook_endpoint_stats_rollup r
        cross join lateral (
          select date_trunc('hour', now() - ${afterHours}::float8 * interval '1 hour') as target
        ) t
        cross join lateral (
          select date_trunc('hour', min(s.bucket)) as next from webhook_endpoint_stats s
          where s.bucket >= coalesce(r.rolled_until, '-infinity')
        ) n
        for update of r`;
      if (step.done) {
        // nothing left before the target: the hours up to it are empty, so the line moves there at once
        await tx`update webhook_endpoint_stats_rollup
          set rolled_until = greatest(rolled_until, ${step.target}::timestamptz)`;
        return false;
      }
      await tx`
        insert into webhook_endpoint_stats_hourly (endpoint_id, bucket, company_id, ${columns})
        select endpoint_id, ${step.next}::timestamptz, company_id, ${sums}
        from webhook_endpoint_stats
        where bucket >= ${step.next}::timestamptz and bucket < ${step.next}::timestamptz + interval '1 hour'
        group by endpoint_id, company_id`;
      await tx`update webhook_endpoint_stats_rollup set rolled_until = ${step.next}::timestamptz + interval '1 hour'`;
      return true;
    });
    if (!rolled) return hours;
  }
}
