/**
 * The errors of endpoints' filters, per endpoint (sql/0035, docs/webhooks.md "Filters"), and what the company's filter
 * time deferred (sql/0044): counted by the transaction that emits the event or decides a deferred record
 * (`recordFilterCounts`), read into the endpoint's stats (`filterErrorsOf`). Kept
 * apart from filters.ts, which evaluates and knows no database, and from endpoint_stats.ts, whose attempts' aggregate
 * the delivery recorder keeps: a filter's error happens before any delivery exists.
 */

import type { SqlOrTransaction } from "../../infra/db.ts";
import { isoUtc } from "../../basics/time.ts";

/** The longest last-error message kept (the filter's own text is at most 1000 characters). */
const MAX_MESSAGE = 1000;

/** What one transaction adds to an endpoint's counts: an error (with its message), records deferred, records refused. */
export type FilterCount = { endpointId: string; message?: string | null; deferred?: number; refused?: number };

/**
 * Adds to each endpoint named (of `companyId`; the caller calls only with some): one error with its message as the
 * endpoint's last when `message` is given, and the records written deferred or refused after deferral
 * (filter_time.ts). One statement: each endpoint's row that no other transaction holds is updated, or a row is made
 * when every row is held, so the emitting transaction never waits for another's count (sql/0035). It is handed to the
 * connection before this returns (`execute()`), as `emitEvent` needs of its statements.
 */
export async function recordFilterCounts(
  tx: SqlOrTransaction,
  companyId: string,
  counts: readonly FilterCount[],
): Promise<void> {
  // one row per endpoint: an update takes one source row per target row, so an endpoint's counts are summed here
  const by = new Map<string, { errors: number; message: string | null; deferred: number; refused: number }>();
  for (const c of counts) {
    const row = by.get(c.endpointId) ?? { errors: 0, message: null, deferred: 0, refused: 0 };
    if (c.message) row.errors++, row.message = c.message.slice(0, MAX_MESSAGE);
    row.deferred += c.deferred ?? 0;
    row.refused += c.refused ?? 0;
    by.set(c.endpointId, row);
  }
  const rows = [...by.values()];
  await tx`
    with e as (
      select * from unnest(${[...by.keys()]}::uuid[], ${rows.map((r) => r.errors)}::int[], ${
    rows.map((r) => r.message)
  }::text[], ${rows.map((r) => r.deferred)}::int[], ${rows.map((r) => r.refused)}::int[])
        as e(endpoint_id, errors, message, deferred, refused)
    ), free as (
      select e.endpoint_id, f.id from e cross join lateral (
        select f.id from webhook_endpoint_filter_errors f
        where f.company_id = ${companyId} and f.endpoint_id = e.endpoint_id
        limit 1 for update skip locked
      ) f
    ), counted as (
      update webhook_endpoint_filter_errors f
      set errors = f.errors + e.errors, last_error = coalesce(e.message, f.last_error),
        last_error_at = case when e.message is null then f.last_error_at else clock_timestamp() end,
        deferred = f.deferred + e.deferred, refused_after_deferral = f.refused_after_deferral + e.refused
      from free join e using (endpoint_id)
      where f.id = free.id
      returning f.endpoint_id
    )
    insert into webhook_endpoint_filter_errors
      (id, company_id, endpoint_id, errors, last_error, last_error_at, deferred, refused_after_deferral)
    select gen_random_uuid(), ${companyId}, e.endpoint_id, e.errors, e.message,
      case when e.message is null then null else clock_timestamp() end, e.deferred, e.refused from e
    where e.endpoint_id not in (select endpoint_id from counted)`.execute();
}

/** An endpoint's filter errors as its stats show them: how many in all, and the last one. */
export type FilterErrors = {
  total: number;
  last: { at: string; message: string } | null;
  /** Records written before their filter was evaluated, for want of the company's filter time (filter_time.ts). */
  deferred: number;
  /** Of those, the ones the filter then refused: deleted, as the fan-out would have written none. */
  refused_after_deferral: number;
  /** Deferred records still waiting for their filter's verdict. */
  deferred_waiting: number;
};

/** The filter errors of one endpoint of `companyId` (0 and null when it has had none). */
export async function filterErrorsOf(
  sql: SqlOrTransaction,
  companyId: string,
  endpointId: string,
): Promise<FilterErrors> {
  const [row] = await sql<
    {
      total: string;
      last_at: Date | null;
      last_error: string | null;
      deferred: string;
      refused: string;
      waiting: number;
    }[]
  >`
    select coalesce(sum(errors), 0)::text as total, max(last_error_at) as last_at,
      coalesce(sum(deferred), 0)::text as deferred, coalesce(sum(refused_after_deferral), 0)::text as refused,
      (select count(*)::int from webhook_filter_deferrals
        where company_id = ${companyId} and endpoint_id = ${endpointId}) as waiting,
      (array_agg(last_error order by last_error_at desc nulls last))[1] as last_error
    from webhook_endpoint_filter_errors where company_id = ${companyId} and endpoint_id = ${endpointId}`;
  const last = row?.last_at ? { at: isoUtc(row.last_at), message: row.last_error ?? "" } : null;
  return {
    total: Number(row?.total ?? 0),
    last,
    deferred: Number(row?.deferred ?? 0),
    refused_after_deferral: Number(row?.refused ?? 0),
    deferred_waiting: row?.waiting ?? 0,
  };
}
