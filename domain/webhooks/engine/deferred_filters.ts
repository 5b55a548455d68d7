/**
 * Decides the delivery records whose filter the company's filter time deferred (outbox/filter_deferrals.ts; docs/
 * webhooks.md, "What a company's filters may spend"), before their first attempt and in record order: a yes makes the
 * record due and wakes its endpoint, a no deletes it (the fan-out would have written none), an error counts as the
 * fan-out counts one. Within the same per-company filter time as the fan-out, in slices between which the event loop
 * answers others. Its own file: the one place the engine evaluates a filter, run by the `decide_filters` job.
 */

import type { Sql, TransactionSql } from "../../infra/db.ts";
import { evaluateFilter } from "../outbox/filters.ts";
import { charged, FILTER_SLICE_MS, filterTimeWait, hasFilterTime, yieldToEventLoop } from "../outbox/filter_time.ts";
import { DEFERRED_UNTIL } from "../outbox/filter_deferrals.ts";
import { type FilterCount, recordFilterCounts } from "../outbox/filter_errors.ts";
import { notifyWake } from "../outbox/wake.ts";

/** Records read and decided per transaction. */
const BATCH = 100;
/** Time one run may spend before it hands the rest to the next run (a job's turn on the worker). */
const RUN_MS = 1_000;

type Waiting = {
  delivery_id: string;
  endpoint_id: string;
  type: string;
  /** Null when the endpoint has none now (removed since): the record then goes as if it had none. */
  filter: string | null;
  data: Record<string, unknown> | null;
  /** Still pending and waiting: a retry or an acknowledge by hand, or the retention, has settled it otherwise. */
  waiting: boolean;
};

/** What one run did: records decided, and in how long the rest may go on (null: none left). */
export type Decided = { decided: number; againInMs: number | null };

/**
 * Decides the company's deferred records, oldest first, until none is left, its filter time is spent or the run's
 * time is up. Each batch in one transaction: the rows are locked (`skip locked`: another run never decides them twice),
 * evaluated, and settled in one statement with their counts and wake-ups.
 */
export async function decideDeferred(sql: Sql, companyId: string): Promise<Decided> {
  const runEnd = performance.now() + RUN_MS;
  let decided = 0;
  for (;;) {
    const wait = filterTimeWait(companyId);
    if (wait > 0) return { decided, againInMs: wait };
    if (performance.now() > runEnd) return { decided, againInMs: 0 };
    const { count, more } = await sql.begin((tx) => decideBatch(tx, companyId));
    decided += count;
    if (!more) return { decided, againInMs: null };
    await yieldToEventLoop();
  }
}

async function decideBatch(tx: TransactionSql, companyId: string): Promise<{ count: number; more: boolean }> {
  const rows = await tx<Waiting[]>`
    select f.delivery_id, f.endpoint_id, coalesce(d.type, '') as type, ep.filter, e.data,
      coalesce(d.status = 'pending' and d.next_attempt_at >= ${DEFERRED_UNTIL}::timestamptz, false) as waiting
    from webhook_filter_deferrals f
    left join webhook_deliveries d on d.company_id = f.company_id and d.id = f.delivery_id
    left join webhook_endpoints ep on ep.company_id = f.company_id and ep.id = f.endpoint_id
    left join events e on e.company_id = f.company_id and e.id = f.event_id and e.inserted_at = f.event_inserted_at
    where f.company_id = ${companyId}
    order by f.delivery_id
    limit ${BATCH}
    for update of f skip locked`;
  const passing: string[] = [];
  const refused: string[] = [];
  const done: string[] = [];
  const counts: FilterCount[] = [];
  let sliceEnd = performance.now() + FILTER_SLICE_MS;
  for (const r of rows) {
    if (r.waiting && r.filter !== null) {
      if (!hasFilterTime(companyId)) break;
      if (performance.now() > sliceEnd) {
        await yieldToEventLoop();
        sliceEnd = performance.now() + FILTER_SLICE_MS;
      }
      const filter = r.filter;
      const outcome = charged(companyId, () => evaluateFilter(filter, r.type, r.data ?? {}));
      if (outcome.passes) passing.push(r.delivery_id);
      else {
        refused.push(r.delivery_id);
        counts.push({ endpointId: r.endpoint_id, message: outcome.error, refused: 1 });
      }
    } else if (r.waiting) passing.push(r.delivery_id);
    done.push(r.delivery_id);
  }
  if (done.length === 0) return { count: 0, more: rows.length > 0 };
  await Promise.all([
    tx`
      with due as (
        update webhook_deliveries d set next_attempt_at = now(), updated_at = now()
        where d.company_id = ${companyId} and d.id = any(${passing}::uuid[]) and d.status = 'pending'
          and d.next_attempt_at >= ${DEFERRED_UNTIL}::timestamptz
        returning d.endpoint_id
      ), gone as (
        delete from webhook_deliveries d
        where d.company_id = ${companyId} and d.id = any(${refused}::uuid[]) and d.status = 'pending'
          and d.next_attempt_at >= ${DEFERRED_UNTIL}::timestamptz
        returning d.endpoint_id
      ), settled as (
        delete from webhook_filter_deferrals f where f.company_id = ${companyId} and f.delivery_id = any(${done}::uuid[])
      )
      -- a refused head lets a sequential lane go on: both wake their endpoint
      select ${notifyWake(tx, tx`select endpoint_id from due union select endpoint_id from gone`)}`,
    counts.length > 0 ? recordFilterCounts(tx, companyId, counts) : null,
  ]);
  return { count: done.length, more: rows.length === BATCH || done.length < rows.length };
}

/** Companies with deferred records nobody has decided for a while (their job lost, or failed on an older release). */
export async function companiesWithStaleDeferrals(sql: Sql): Promise<string[]> {
  const rows = await sql<{ company_id: string }[]>`
    select distinct company_id from webhook_filter_deferrals where deferred_at < now() - interval '30 seconds'
    limit 100`;
  return rows.map((r) => r.company_id);
}
