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

/**
 * When a deferred record is due: never, as far as a drainer of any release can tell (a sequential endpoint's lane
 * waits on it, as on a head not yet due, so order holds); the engine makes it due once its filter passes. A date, not
 * `infinity`, which a `Date` cannot hold: a previous release reading such a record presents a date.
 */
export const DEFERRED_UNTIL = "9999-01-01T00:00:00Z";
const DEFERRED_MS = Date.parse(DEFERRED_UNTIL);

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
