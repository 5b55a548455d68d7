/**
 * The delivery records as integrators see and steer them (docs/webhooks.md, "Acknowledge and retry by hand"): the events
 * list and detail, acknowledge, retry, recover, and the test event. The delivery engine itself is in delivery/.
 */

import { afterDeadlock, type Sql, type SqlOrTransaction, type TransactionSql } from "../../infra/db.ts";
import { ApiError, notFound, serviceUnavailable, unprocessable, validationFailed } from "../../basics/errors.ts";
import { isoUtc, isoUtcOrNull, pgTimestamptz } from "../../basics/time.ts";
import { wakeEndpoints } from "../outbox/wake.ts";
import { catalogueEntry } from "../outbox/catalogue.ts";
import { eventData } from "../outbox/event_data.ts";
import { emitEvent, enables, EVENT_TYPES, type EventType } from "../outbox/events.ts";
import { findEvent, findTransactionEvents, type FoundEvent } from "../outbox/event_search.ts";
import { isDeferred } from "../outbox/filter_deferrals.ts";
import { REPLAY_LIMIT, type ReplayEndpoint, replaySkipped } from "../outbox/replay.ts";

export const DEFAULT_PER_PAGE = 20;

type DeliveryRow = {
  id: string;
  event_id: string;
  endpoint_id: string;
  company_id: string;
  type: string;
  status: "pending" | "succeeded" | "failed";
  attempts: number;
  next_attempt_at: Date | null;
  last_error: string | null;
  /** The batch that carries it (docs/webhooks.md, "Batches"); null when sent alone. */
  batch_id: string | null;
  payload: Record<string, unknown>;
  event_created_at: Date;
  inserted_at: Date;
  /** The head of its sequential endpoint's queue, when that is another record (`withHeads`). */
  head?: Head | null;
};

/** The oldest pending record of a sequential endpoint: the one record its queue may send (fill_slots.ts). */
type Head = { id: string; next_attempt_at: Date | null };

type AttemptRow = {
  id: string;
  attempt_number: number;
  http_status: number;
  response_body: string;
  duration_ms: number | null;
  response_headers: Record<string, string> | null;
  inserted_at: Date;
};

/** The delivery record as the events API shows it; `company_id` and `attempts` on the detail endpoint only. */
export function presentDelivery(d: DeliveryRow, attempts?: AttemptRow[]) {
  return {
    id: d.id,
    event_id: d.event_id,
    endpoint_id: d.endpoint_id,
    ...(attempts ? { company_id: d.company_id } : {}),
    type: d.type,
    status: d.status,
    attempts_count: d.attempts,
    batch_id: d.batch_id ?? null,
    // a deferred record waits for its filter's verdict, and a record queued behind its sequential endpoint's head for
    // that head, not for a time of their own (docs/webhooks.md, "Delivery modes and ordering")
    next_attempt_at: isDeferred(d.next_attempt_at) || d.head ? null : isoUtcOrNull(d.next_attempt_at),
    ...(isDeferred(d.next_attempt_at) && d.status === "pending" ? { filter_deferred: true as const } : {}),
    ...(d.head ? { waiting_for: presentHead(d.head) } : {}),
    last_error: d.last_error,
    payload: d.payload,
    event_created_at: isoUtc(d.event_created_at),
    inserted_at: isoUtc(d.inserted_at),
    ...(attempts
      ? {
        attempts: attempts.map((a) => ({
          id: a.id,
          attempt_number: a.attempt_number,
          http_status: a.http_status,
          response_body: a.response_body,
          duration_ms: a.duration_ms,
          response_headers: a.response_headers ?? {},
          inserted_at: isoUtc(a.inserted_at),
        })),
      }
      : {}),
  };
}

/** What a queued record waits for: the head's id and its next try (null while the head waits for its own filter). */
function presentHead(head: Head) {
  return {
    delivery_id: head.id,
    next_attempt_at: isDeferred(head.next_attempt_at) ? null : isoUtcOrNull(head.next_attempt_at),
    ...(isDeferred(head.next_attempt_at) ? { filter_deferred: true as const } : {}),
  };
}

/**
 * The records, each pending one of a sequential endpoint that is not its queue's head given that head (`head`): a
 * sequential endpoint sends only its oldest pending record (by id, as fill_slots.ts leases it), so the others wait for
 * it whatever their own `next_attempt_at` says. One statement for every sequential endpoint the records name.
 */
async function withHeads(sql: Sql, companyId: string, rows: DeliveryRow[]): Promise<DeliveryRow[]> {
  const endpointIds = [...new Set(rows.filter((r) => r.status === "pending").map((r) => r.endpoint_id))];
  if (!endpointIds.length) return rows;
  const heads = await sql<(Head & { endpoint_id: string })[]>`
    select e.id as endpoint_id, h.id, h.next_attempt_at from webhook_endpoints e
    cross join lateral (
      select d.id, d.next_attempt_at from webhook_deliveries d
      where d.company_id = ${companyId} and d.endpoint_id = e.id and d.status = 'pending'
      order by d.id limit 1
    ) h
    where e.company_id = ${companyId} and e.id = any(${endpointIds}::uuid[]) and e.delivery_mode = 'sequential'`;
  if (!heads.length) return rows;
  const byEndpoint = new Map(heads.map((h) => [h.endpoint_id, { id: h.id, next_attempt_at: h.next_attempt_at }]));
  return rows.map((r) => {
    const head = r.status === "pending" ? byEndpoint.get(r.endpoint_id) : undefined;
    return head && head.id !== r.id ? { ...r, head } : r;
  });
}

/**
 * A bound of the events list: `at` is the instant written, `end` the end of the precision it was written with
 * (the next day for YYYY-MM-DD, the next second for HH:MM:SS), so an inclusive upper bound takes the whole day.
 */
export type TimeBound = { at: Date; end: Date };

/** The filters of the events list, already parsed. */
export type EventsFilter = {
  last_id?: string;
  per_page?: number;
  order_by?: "asc" | "desc";
  status?: "pending" | "succeeded" | "failed";
  type?: string[];
  endpoint_id?: string;
  from?: TimeBound;
  to?: TimeBound;
  /** The records of this event (one per endpoint it went to). */
  event_id?: string;
  /** The records of the events whose data names this transaction (event_search.ts). */
  transaction_id?: string;
};

/**
 * The events the `event_id` and `transaction_id` filters allow, when either is given (both: the events that match
 * both); undefined when neither is.
 */
async function searchedEvents(sql: Sql, companyId: string, f: EventsFilter): Promise<FoundEvent[] | undefined> {
  if (!f.event_id && !f.transaction_id) return undefined;
  const [byEvent, byTransaction] = await Promise.all([
    f.event_id ? findEvent(sql, companyId, f.event_id) : undefined,
    f.transaction_id ? findTransactionEvents(sql, companyId, f.transaction_id) : undefined,
  ]);
  if (!byEvent) return byTransaction;
  if (!byTransaction) return byEvent;
  return byEvent.filter((e) => byTransaction.some((t) => t.id === e.id));
}

/**
 * A page of delivery records ordered by (inserted_at, id), newest first unless `order_by=asc`; `last_id` continues
 * after that record in the same order (an unknown or foreign id gives an empty page).
 */
export async function listDeliveries(sql: Sql, companyId: string, f: EventsFilter): Promise<DeliveryRow[]> {
  const desc = f.order_by !== "asc";
  const conds = [sql`d.company_id = ${companyId}`];
  const found = await searchedEvents(sql, companyId, f);
  if (found?.length === 0) return [];
  if (found) {
    // the records' instants are their events': the company index finds them by those. Sent as text[]: a timestamptz[]
    // parameter is bound as Dates by the driver, which drops the microseconds
    conds.push(sql`d.inserted_at = any(${found.map((e) => e.instant)}::text[]::timestamptz[])`);
    conds.push(sql`d.event_id = any(${found.map((e) => e.id)}::uuid[])`);
  }
  if (f.status) conds.push(sql`d.status = ${f.status}`);
  if (f.type) conds.push(sql`d.type = any(${f.type}::text[])`);
  if (f.endpoint_id) conds.push(sql`d.endpoint_id = ${f.endpoint_id}`);
  // as text: postgres.js would hand a timestamptz parameter to JavaScript's Date, which cannot read these forms
  if (f.from) conds.push(sql`d.inserted_at >= ${pgTimestamptz(f.from.at)}::text::timestamptz`);
  if (f.to) conds.push(sql`d.inserted_at < ${pgTimestamptz(f.to.end)}::text::timestamptz`);
  if (f.last_id) {
    const cursor = sql`(select c.inserted_at, c.id from webhook_deliveries c
      where c.company_id = ${companyId} and c.id = ${f.last_id})`;
    conds.push(desc ? sql`(d.inserted_at, d.id) < ${cursor}` : sql`(d.inserted_at, d.id) > ${cursor}`);
  }
  const where = conds.reduce((all, c) => sql`${all} and ${c}`);
  const order = desc ? sql`d.inserted_at desc, d.id desc` : sql`d.inserted_at, d.id`;
  const rows = await sql<RecordRow[]>`
    select ${recordColumns(sql)} from webhook_deliveries d
    where ${where}
    order by ${order}
    limit ${f.per_page ?? DEFAULT_PER_PAGE}`;
  return await withHeads(sql, companyId, await withEvents(sql, rows));
}

/** A delivery record as read before its event's data is added. */
type RecordRow = Omit<DeliveryRow, "payload" | "event_created_at">;

const recordColumns = (sql: SqlOrTransaction) =>
  sql`d.id, d.event_id, d.endpoint_id, d.company_id, d.type, d.status, d.attempts, d.next_attempt_at, d.last_error,
    d.batch_id, d.inserted_at`;

/**
 * The records with their events' data, in their order. The events are read by a statement of their own rather than
 * joined (domain/webhooks/outbox/event_data.ts); a record whose event is gone is left out, as a join would.
 */
async function withEvents(sql: SqlOrTransaction, rows: RecordRow[]): Promise<DeliveryRow[]> {
  const data = await eventData(sql, rows);
  return rows.flatMap((r) => {
    const payload = data.get(r.event_id);
    // the record is written in its event's statement, with its instant
    return payload ? [{ ...r, payload, event_created_at: r.inserted_at }] : [];
  });
}

export async function getDelivery(sql: Sql, companyId: string, id: string) {
  const [row] = await withHeads(
    sql,
    companyId,
    await withEvents(
      sql,
      await sql<RecordRow[]>`
      select ${recordColumns(sql)} from webhook_deliveries d where d.company_id = ${companyId} and d.id = ${id}`,
    ),
  );
  if (!row) throw notFound();
  const attempts = await sql<AttemptRow[]>`
    select id, attempt_number, http_status, response_body, duration_ms, response_headers, inserted_at
    from webhook_attempts
    where company_id = ${companyId} and delivery_id = ${id} and inserted_at >= ${row.inserted_at}
    order by attempt_number, inserted_at`;
  return { delivery: row, attempts };
}

/**
 * Marks the record processed: nothing more is attempted for it (a queued attempt finds it no longer pending),
 * and a sequential endpoint it was holding moves on to the next record at once.
 */
export async function acknowledgeDelivery(sql: Sql, companyId: string, id: string) {
  return await afterDeadlock(() =>
    sql.begin(async (tx) => {
      await lockWithBatch(tx, companyId, id);
      const [row] = await tx<{ id: string; endpoint_id: string }[]>`
      update webhook_deliveries set status = 'succeeded', next_attempt_at = null, updated_at = now()
      where company_id = ${companyId} and id = ${id}
      returning id, endpoint_id`;
      if (!row) throw notFound();
      // a batch is a unit: its other records are acknowledged with it (docs/webhooks.md, "Batches")
      await tx`
      update webhook_deliveries set status = 'succeeded', next_attempt_at = null, updated_at = now()
      where company_id = ${companyId} and id = any(${batchMates(tx, companyId, id)}) and id <> ${id}`;
      await wakeEndpoints(tx, [row.endpoint_id]);
      return { id: row.id, status: "succeeded" as const };
    })
  );
}

/**
 * The one rule of a manual retry, for one record or many: each becomes pending, due now, with a fresh schedule of
 * 10 attempts (the attempt numbers go on), and the endpoint is woken. Records due at the same instant go out in
 * record id order, i.e. event order, in both delivery modes. The caller has checked the records may be retried, or
 * names the status they must still have (`onlyIf`: a record acknowledged meanwhile stays so). Answers how many.
 */
async function requeue(
  tx: TransactionSql,
  companyId: string,
  endpointId: string,
  ids: string[],
  onlyIf?: "failed",
): Promise<number> {
  if (ids.length === 0) return 0;
  const still = onlyIf ? tx`and status = ${onlyIf}` : tx``;
  const { count } = await tx`
    update webhook_deliveries set status = 'pending', schedule_attempts = 0, next_attempt_at = now(), updated_at = now()
    where company_id = ${companyId} and id = any(${ids}::uuid[]) ${still}`;
  if (count) await wakeEndpoints(tx, [endpointId]);
  return count;
}

/**
 * The records of the batch that carries record `id` (webhook_batches, sql/0049), as an array expression; empty for a
 * record sent alone. By the batch's primary key: the records' `batch_id` has no index.
 */
function batchMates(tx: SqlOrTransaction, companyId: string, id: string) {
  return tx`coalesce((select b.delivery_ids from webhook_batches b
    where b.company_id = ${companyId} and b.id = (select d.batch_id from webhook_deliveries d
      where d.company_id = ${companyId} and d.id = ${id})), '{}'::uuid[])`;
}

/**
 * Locks record `id` and its batch mates in id order before either is written: the engine records a batch's attempt
 * on all its records in one statement, and a request that locked one record first, then its mates, would wait for it
 * while it waited for the request (a deadlock: the rare 500 of an acknowledge or a retry while the batch was in flight).
 * The engine's statement locks in its plan's order, so a deadlock stays possible; `afterDeadlock` runs the request again.
 */
async function lockWithBatch(tx: TransactionSql, companyId: string, id: string) {
  await tx`select id from webhook_deliveries
    where company_id = ${companyId} and (id = ${id} or id = any(${batchMates(tx, companyId, id)}))
    order by id for update`;
}

/** A disabled endpoint receives nothing more: saying a retry was enqueued would be a promise not kept. */
function refuseDisabled(endpointStatus: string) {
  if (endpointStatus !== "active") throw unprocessable("endpoint is disabled");
}

/** Attempts again at once with a fresh schedule of 10 attempts (pending or failed records; never succeeded ones). */
export async function retryDelivery(sql: Sql, companyId: string, id: string) {
  await afterDeadlock(() =>
    sql.begin(async (tx) => {
      await lockWithBatch(tx, companyId, id);
      const [row] = await tx<{ status: string; endpoint_id: string; endpoint_status: string }[]>`
      select d.status, d.endpoint_id, e.status as endpoint_status
      from webhook_deliveries d join webhook_endpoints e on e.id = d.endpoint_id
      where d.company_id = ${companyId} and d.id = ${id}`;
      if (!row) throw notFound();
      if (row.status === "succeeded") throw unprocessable("event already succeeded");
      refuseDisabled(row.endpoint_status);
      // a batch is retried whole, as it was sent (docs/webhooks.md, "Batches"); its records not succeeded
      const [mates] = await tx<{ ids: string[] }[]>`
      select coalesce(array_agg(d.id), '{}') as ids from webhook_deliveries d
      where d.company_id = ${companyId} and d.id = any(${batchMates(tx, companyId, id)}) and d.id <> ${id}
        and d.status <> 'succeeded'`;
      await requeue(tx, companyId, row.endpoint_id, [id, ...mates.ids]);
    })
  );
}

/** What a recover queued: failed records re-queued, skipped events replayed, and whether more of each remain. */
export type RecoverResult = {
  endpoint_id: string;
  deliveries: number;
  failed: number;
  /** More failed records remain past this call's limit: the same body again takes the next ones. */
  failed_remaining: boolean;
  skipped: number;
  skipped_remaining: boolean;
  /** Where the next call's `skipped_after` goes on (replay.ts); null once the range's skipped events are done. */
  skipped_after: string | null;
  /** Of `skipped`, the records queued waiting for their filter's verdict (filter_deferrals.ts). */
  skipped_deferred: number;
};

/** What bounds one recover (docs/limits.md, "Recover"). */
export type RecoverBounds = {
  retentionDays: number;
  /** Records queued at most per call, failed and skipped each (REPLAY_LIMIT). */
  replayLimit?: number;
  /** Events read at most per call while looking for skipped ones (WEBHOOK_RECOVER_SCAN_EVENTS). */
  scanEvents?: number;
};

/** One recover of an endpoint at a time: the first key of its transaction-scoped advisory lock (the second: the id). */
export const RECOVER_LOCK = 726_032;
/** A recover's statements give up rather than wait on another's lock or run past this (a 503 to retry). */
const RECOVER_LOCK_TIMEOUT = "2s";
const RECOVER_STATEMENT_TIMEOUT = "20s";

/**
 * Recover: the `failed` records of the endpoint inserted in [since, until) are retried as by hand, in event order, at
 * most `replayLimit` a call (the oldest first; the next call finds the rest still failed). Records pending or
 * succeeded are left alone, so a recover while deliveries are in flight sends each failed one once more and nothing
 * twice. With `includeSkipped`, the events it would have received while it was disabled in that range are queued too
 * (replay.ts), reading at most `scanEvents` events after `skippedAfter`. Answers how many of each were queued.
 *
 * It holds no lock that delivery needs while it reads: an advisory lock of its own makes a second recover of the
 * same endpoint answer 409 at once, and the endpoint's row is locked only at the end, to see that it is still active
 * when what was queued commits (a disable meanwhile waits, then fails what this one queued). Its statements run under
 * `lock_timeout` and `statement_timeout` (503 when they run out), so a connection is held for a bounded time.
 */
export async function recoverDeliveries(
  sql: Sql,
  companyId: string,
  endpointId: string,
  range: { since: Date; until?: Date },
  opts: RecoverBounds & { includeSkipped?: boolean; skippedAfter?: string | null },
): Promise<RecoverResult> {
  const limit = opts.replayLimit ?? REPLAY_LIMIT;
  try {
    return await sql.begin(async (tx) => {
      await tx`select set_config('lock_timeout', ${RECOVER_LOCK_TIMEOUT}, true),
        set_config('statement_timeout', ${RECOVER_STATEMENT_TIMEOUT}, true)`;
      const [endpoint] = await tx<(ReplayEndpoint & { status: string; free: boolean })[]>`
        select id, status, enabled_events, filter, pg_try_advisory_xact_lock(${RECOVER_LOCK}, hashtext(id::text)) as free
        from webhook_endpoints
        where company_id = ${companyId} and id = ${endpointId}`;
      if (!endpoint) throw notFound();
      if (!endpoint.free) throw new ApiError(409, { detail: "a recover of this endpoint is already running" });
      refuseDisabled(endpoint.status);
      // as text: postgres.js would hand a timestamptz parameter to JavaScript's Date
      const until = range.until ? tx`and inserted_at < ${pgTimestamptz(range.until)}::text::timestamptz` : tx``;
      // one more than the limit, to know whether more remain; each row changes only if it is still failed
      const failed = await tx<{ id: string }[]>`
        select id from webhook_deliveries
        where company_id = ${companyId} and endpoint_id = ${endpointId} and status = 'failed'
          and inserted_at >= ${pgTimestamptz(range.since)}::text::timestamptz ${until}
        order by inserted_at, id
        limit ${limit + 1}`;
      const requeued = await requeue(tx, companyId, endpointId, failed.slice(0, limit).map((r) => r.id), "failed");
      const replay = opts.includeSkipped
        ? await replaySkipped(tx, companyId, endpoint, { ...range, retentionDays: opts.retentionDays }, {
          limit,
          scan: opts.scanEvents,
          after: opts.skippedAfter,
        })
        : { skipped: 0, remaining: false, after: null };
      if (replay.skipped) await wakeEndpoints(tx, [endpointId]);
      // last and briefly: still active as this commits (a disable waits for the commit, then fails what was queued)
      const [still] = await tx<{ status: string }[]>`
        select status from webhook_endpoints where company_id = ${companyId} and id = ${endpointId} for share`;
      refuseDisabled(still?.status ?? "disabled");
      return {
        endpoint_id: endpointId,
        deliveries: requeued + replay.skipped,
        failed: requeued,
        failed_remaining: failed.length > limit,
        skipped: replay.skipped,
        skipped_remaining: replay.remaining,
        skipped_after: replay.after,
        skipped_deferred: replay.deferred ?? 0,
      };
    });
  } catch (err) {
    // 55P03 lock_not_available, 57014 query_canceled (the statement timeout): nothing was queued, try again
    const code = (err as { code?: string }).code;
    if (code === "55P03" || code === "57014") throw serviceUnavailable(1);
    throw err;
  }
}

/**
 * A test event: the catalogue's example of `type` (default: the first of the endpoint's enabled_events, `identified`
 * for `["*"]`), emitted like any event but fanned out to this endpoint alone, so it is stored, signed, retried and
 * listed like the others.
 * Returns its delivery record as the events list shows it.
 */
export async function sendTestEvent(sql: Sql, companyId: string, endpointId: string, type?: EventType) {
  return await sql.begin(async (tx) => {
    const [endpoint] = await tx<{ status: string; enabled_events: string[] }[]>`
      select status, enabled_events from webhook_endpoints
      where company_id = ${companyId} and id = ${endpointId} for share`;
    if (!endpoint) throw notFound();
    refuseDisabled(endpoint.status);
    const all = endpoint.enabled_events.includes("*");
    const chosen = type ?? (all ? EVENT_TYPES[0] : endpoint.enabled_events[0] as EventType);
    // `*` takes in every type but the operational ones (events.ts, `enables`)
    if (!enables(endpoint.enabled_events, chosen)) {
      throw validationFailed({ type: ["is not enabled for this endpoint"] }, 422);
    }
    const example = catalogueEntry(chosen).example;
    const { id } = await emitEvent(tx, companyId, chosen, example.data, { onlyEndpointId: endpointId });
    // for this endpoint alone: a replay to another endpoint of the company leaves it out (replay.ts); written with
    // the event's instant, so one day's partition is touched
    await tx`
      update events set only_endpoint_id = ${endpointId}
      where company_id = ${companyId} and id = ${id} and inserted_at = now()`;
    const [row] = await withEvents(
      tx,
      await tx<RecordRow[]>`
        select ${recordColumns(tx)} from webhook_deliveries d
        where d.company_id = ${companyId} and d.event_id = ${id} and d.endpoint_id = ${endpointId}`,
    );
    return row;
  });
}
