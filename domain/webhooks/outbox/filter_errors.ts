/**
 * The errors of endpoints' filters, per endpoint (sql/0035, docs/webhooks.md "Filters"): counted by the transaction
 * that emits the event (`recordFilterErrors`, from events.ts), read into the endpoint's stats (`filterErrorsOf`). Kept
 * apart from filters.ts, which evaluates and knows no database, and from endpoint_stats.ts, whose attempts' aggregate
 * the delivery recorder keeps: a filter's error happens before any delivery exists.
 */

import type { SqlOrTransaction } from "../../infra/db.ts";
import { isoUtc } from "../../basics/time.ts";

/** The longest last-error message kept (the filter's own text is at most 1000 characters). */
const MAX_MESSAGE = 1000;

/**
 * Adds one error to each endpoint named (of `companyId`; the caller calls only with some), with its message as the
 * endpoint's last. One statement: each endpoint's row that no other transaction holds is updated, or a row is made when
 * every row is held, so the emitting transaction never waits for another's count (sql/0035). It is handed to the
 * connection before this returns (`execute()`), as `emitEvent` needs of its statements.
 */
export async function recordFilterErrors(
  tx: SqlOrTransaction,
  companyId: string,
  errors: readonly { endpointId: string; message: string }[],
): Promise<void> {
  await tx`
    with e as (
      select * from unnest(${errors.map((e) => e.endpointId)}::uuid[], ${
    errors.map((e) => e.message.slice(0, MAX_MESSAGE))
  }::text[]) as e(endpoint_id, message)
    ), free as (
      select e.endpoint_id, f.id from e cross join lateral (
        select f.id from webhook_endpoint_filter_errors f
        where f.company_id = ${companyId} and f.endpoint_id = e.endpoint_id
        limit 1 for update skip locked
      ) f
    ), counted as (
      update webhook_endpoint_filter_errors f
      set errors = f.errors + 1, last_error = e.message, last_error_at = clock_timestamp()
      from free join e using (endpoint_id)
      where f.id = free.id
      returning f.endpoint_id
    )
    insert into webhook_endpoint_filter_errors (id, company_id, endpoint_id, errors, last_error, last_error_at)
    select gen_random_uuid(), ${companyId}, e.endpoint_id, 1, e.message, clock_timestamp() from e
    where e.endpoint_id not in (select endpoint_id from counted)`.execute();
}

/** An endpoint's filter errors as its stats show them: how many in all, and the last one. */
export type FilterErrors = { total: number; last: { at: string; message: string } | null };

/** The filter errors of one endpoint of `companyId` (0 and null when it has had none). */
export async function filterErrorsOf(
  sql: SqlOrTransaction,
  companyId: string,
  endpointId: string,
): Promise<FilterErrors> {
  const [row] = await sql<{ total: string; last_at: Date | null; last_error: string | null }[]>`
    select coalesce(sum(errors), 0)::text as total, max(last_error_at) as last_at,
      (array_agg(last_error order by last_error_at desc nulls last))[1] as last_error
    from webhook_endpoint_filter_errors where company_id = ${companyId} and endpoint_id = ${endpointId}`;
  const last = row?.last_at ? { at: isoUtc(row.last_at), message: row.last_error ?? "" } : null;
  return { total: Number(row?.total ?? 0), last };
}
