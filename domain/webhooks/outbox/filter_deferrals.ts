/**
 * Records written before their endpoint's filter said yes (sql/0044; docs/webhooks.md, "What a company's filters may
 * spend"): when the company's filter time is spent (filter_time.ts), the fan-out and a recover still write the record,
 * in the event's transaction, but waiting: due at `DEFERRED_UNTIL`, with a row naming it for the engine, which decides
 * it before its first attempt (domain/webhooks/engine/deferred_filters.ts). Its own file: the fan-out (events.ts) and
 * replay.ts both write such records, and the engine and the records' reads both know the mark.
 */

import type postgres from "postgres";
import type { TransactionSql } from "../../infra/db.ts";
import { TASKS } from "../../infra/tasks.ts";
import { metrics } from "../../infra/metrics.ts";
import { log } from "../../basics/log.ts";

/**
 * When a deferred record is due: never, as far as a drainer of any release can tell (a sequential endpoint's lane
 * waits on it, as on a head not yet due, so order holds); the engine makes it due once its filter passes. A date, not
 * `infinity`, which a `Date` cannot hold: a previous release reading such a record presents a date.
 */
export const DEFERRED_UNTIL = "9999-01-01T00:00:00Z";
const DEFERRED_MS = Date.parse(DEFERRED_UNTIL);

/**
 * Deferred records a company may have waiting for a verdict (docs/limits.md, "A company's filter time"): its filters'
 * backlog, which its filter time pays off at its own pace. Past it, an endpoint's filter is not evaluated and its event
 * not delivered to it, as a counted error (`DEFERRALS_FULL`); a recover stops where it is, to go on later.
 */
export const MAX_DEFERRED_WAITING = 10_000;
export const DEFERRALS_FULL = `not evaluated: the company's filter time is spent and ${
  MAX_DEFERRED_WAITING.toLocaleString("en-US")
} of its records already wait for their filter's verdict`;
/** How often an instance reads a company's waiting count again, while it defers. */
const RECOUNT_MS = 1_000;
/** Companies whose count is remembered; past it, the oldest counts are forgotten. */
const REMEMBERED_COMPANIES = 10_000;

type Known = { waiting: number; at: number; counting: boolean; told: number };
const known = new Map<string, Known>();
let countWaiting: ((companyId: string) => Promise<number>) | null = null;

/**
 * How an instance counts a company's waiting records (the app gives a read on its pool, `countDeferred`): read at most
 * once a second per company and only while it defers, in the background, so the fan-out never waits for it.
 */
export function countDeferralsWith(count: (companyId: string) => Promise<number>) {
  countWaiting = count;
}

/** A company's waiting deferred records, up to one past the bound (an index range of the company). */
export async function countDeferred(sql: postgres.Sql, companyId: string): Promise<number> {
  const [{ n }] = await sql<{ n: number }[]>`
    select count(*)::int as n from (
      select 1 from webhook_filter_deferrals where company_id = ${companyId} limit ${MAX_DEFERRED_WAITING + 1}
    ) w`;
  return n;
}

/**
 * How many more records the company may defer now, as this instance knows it: its last count, plus what it deferred
 * since. A stale count is read again in the background; until then, the known one stands.
 */
export function deferralRoom(companyId: string): number {
  const now = performance.now();
  let k = known.get(companyId);
  if (!k) {
    if (known.size >= REMEMBERED_COMPANIES) known.delete(known.keys().next().value!);
    k = { waiting: 0, at: -Infinity, counting: false, told: -Infinity };
    known.set(companyId, k);
  }
  if (countWaiting && !k.counting && now - k.at > RECOUNT_MS) {
    const entry = k;
    entry.counting = true;
    countWaiting(companyId)
      .then((n) => Object.assign(entry, { waiting: n, at: performance.now() }))
      .catch(() => {}) // the known count stands; the next deferral asks again
      .finally(() => entry.counting = false);
  }
  return Math.max(0, MAX_DEFERRED_WAITING - k.waiting);
}

/** How often an instance tells the operator that a company's filter time is spent, at most: once a minute. */
const TOLD_EVERY_MS = 60_000;

/**
 * `n` records deferred by this instance, counted until the next read of the company's count, and said in the log
 * once a minute per company (what the endpoint's stats and `webhook_filter_deferred_total` count one by one).
 */
export function noteDeferred(companyId: string, n: number) {
  const k = known.get(companyId);
  if (!k) return;
  k.waiting += n;
  const now = performance.now();
  if (now - k.told < TOLD_EVERY_MS) return;
  k.told = now;
  log.warn("filter time spent: records deferred until their filter is decided", {
    company_id: companyId,
    deferred: n,
    waiting: k.waiting,
  });
}

/** Whether a record's `next_attempt_at` is the mark of a deferred record. */
export const isDeferred = (nextAttemptAt: Date | null) => nextAttemptAt !== null && +nextAttemptAt >= DEFERRED_MS;

/**
 * The statement that asks the engine to decide a company's deferred records: one job per company at a time (its
 * queue), and a single pending one (its key), whoever asks.
 */
export function askDecision(
  tx: TransactionSql | postgres.Sql,
  companyId: string,
  inMs = 0,
): postgres.PendingQuery<postgres.Row[]> {
  const key = `${TASKS.decideFilters}:${companyId}`;
  return tx`select graphile_worker.add_job(${TASKS.decideFilters}, json_build_object('company_id', ${companyId}::text),
    queue_name := ${key}, job_key := ${key}, run_at := now() + ${inMs}::int * interval '1 millisecond')`;
}

/**
 * Writes the deferred records of one event (the fan-out's, events.ts) at the event's instant (the transaction's
 * start, as the event's own default), their rows for the engine, and the job that decides them. Handed to the
 * connection before this returns, as emitEvent needs of its statements.
 */
export function writeDeferred(
  tx: TransactionSql,
  companyId: string,
  eventId: string,
  type: string,
  deliveries: { id: string; endpointId: string }[],
): Promise<unknown> {
  metrics.filterDeferred.inc({}, deliveries.length);
  return Promise.all([
    tx`
      with recs as (
        insert into webhook_deliveries (id, company_id, event_id, endpoint_id, type, next_attempt_at, inserted_at)
        select d.id, ${companyId}, ${eventId}, d.endpoint_id, ${type}, ${DEFERRED_UNTIL}::timestamptz, now()
        from unnest(${deliveries.map((d) => d.id)}::uuid[], ${deliveries.map((d) => d.endpointId)}::uuid[])
          as d(id, endpoint_id)
        returning id, endpoint_id
      )
      insert into webhook_filter_deferrals (delivery_id, company_id, endpoint_id, event_id, event_inserted_at)
      select id, ${companyId}, endpoint_id, ${eventId}, now() from recs`.execute(),
    askDecision(tx, companyId).execute(),
  ]);
}
