import type { Sql, TransactionSql, Tx } from "../infra/db.ts";
import { notFound, unprocessable, validationFailed } from "../basics/errors.ts";
import { isoUtc, isoUtcOrNull, pgTimestamptz } from "../basics/time.ts";
import { wakeEndpoints } from "./delivery/wake.ts";
import { catalogueEntry } from "./catalogue.ts";
import { eventData } from "./event_data.ts";
import { emitEvent, enables, EVENT_TYPES, type EventType } from "./events.ts";
import { type ReplayEndpoint, replaySkipped } from "./replay.ts";

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
  payload: Record<string, unknown>;
  event_created_at: Date;
  inserted_at: Date;
};

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
    next_attempt_at: isoUtcOrNull(d.next_attempt_at),
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
};

/**
 * A page of delivery records ordered by (inserted_at, id), newest first unless `order_by=asc`; `last_id` continues
 * after that record in the same order (an unknown or foreign id gives an empty page).
 */
export async function listDeliveries(sql: Sql, companyId: string, f: EventsFilter): Promise<DeliveryRow[]> {
  const desc = f.order_by !== "asc";
  const conds = [sql`d.company_id = ${companyId}`];
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
  return await withEvents(sql, rows);
}

/** A delivery record as read before its event's data is added. */
type RecordRow = Omit<DeliveryRow, "payload" | "event_created_at">;

const recordColumns = (sql: Tx) =>
  sql`d.id, d.event_id, d.endpoint_id, d.company_id, d.type, d.status, d.attempts, d.next_attempt_at, d.last_error,
    d.inserted_at`;

/**
 * The records with their events' data, in their order. The events are read by a statement of their own rather than
 * joined (domain/webhooks/event_data.ts); a record whose event is gone is left out, as a join would.
 */
async function withEvents(sql: Tx, rows: RecordRow[]): Promise<DeliveryRow[]> {
  const data = await eventData(sql, rows);
  return rows.flatMap((r) => {
    const payload = data.get(r.event_id);
    // the record is written in its event's statement, with its instant
    return payload ? [{ ...r, payload, event_created_at: r.inserted_at }] : [];
  });
}

export async function getDelivery(sql: Sql, companyId: string, id: string) {
  const [row] = await withEvents(
    sql,
    await sql<RecordRow[]>`
      select ${recordColumns(sql)} from webhook_deliveries d where d.company_id = ${companyId} and d.id = ${id}`,
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
  return await sql.begin(async (tx) => {
    const [row] = await tx<{ id: string; endpoint_id: string }[]>`
      update webhook_deliveries set status = 'succeeded', next_attempt_at = null, updated_at = now()
      where company_id = ${companyId} and id = ${id}
      returning id, endpoint_id`;
    if (!row) throw notFound();
    await wakeEndpoints(tx, [row.endpoint_id]);
    return { id: row.id, status: "succeeded" as const };
  });
}

/**
 * The one rule of a manual retry, for one record or many: each becomes pending, due now, with a fresh schedule of
 * 10 attempts (the attempt numbers go on), and the endpoint is woken. Records due at the same instant go out in
 * record id order, i.e. event order, in both delivery modes. The caller has checked the records may be retried.
 */
async function requeue(tx: TransactionSql, companyId: string, endpointId: string, ids: string[]) {
  if (ids.length === 0) return;
  await tx`
    update webhook_deliveries set status = 'pending', schedule_attempts = 0, next_attempt_at = now(), updated_at = now()
    where company_id = ${companyId} and id = any(${ids}::uuid[])`;
  await wakeEndpoints(tx, [endpointId]);
}

/** A disabled endpoint receives nothing more: saying a retry was enqueued would be a promise not kept. */
function refuseDisabled(endpointStatus: string) {
  if (endpointStatus !== "active") throw unprocessable("endpoint is disabled");
}

/** Attempts again at once with a fresh schedule of 10 attempts (pending or failed records; never succeeded ones). */
export async function retryDelivery(sql: Sql, companyId: string, id: string) {
  await sql.begin(async (tx) => {
    const [row] = await tx<{ status: string; endpoint_id: string; endpoint_status: string }[]>`
      select d.status, d.endpoint_id, e.status as endpoint_status
      from webhook_deliveries d join webhook_endpoints e on e.id = d.endpoint_id
      where d.company_id = ${companyId} and d.id = ${id}
      for update of d`;
    if (!row) throw notFound();
    if (row.status === "succeeded") throw unprocessable("event already succeeded");
    refuseDisabled(row.endpoint_status);
    await requeue(tx, companyId, row.endpoint_id, [id]);
  });
}

/** What a recover queued: failed records re-queued, skipped events replayed, and whether more skipped remain. */
export type RecoverResult = {
  endpoint_id: string;
  deliveries: number;
  failed: number;
  skipped: number;
  skipped_remaining: boolean;
};

/**
 * Recover: every `failed` record of the endpoint inserted in [since, until) is retried as by hand, in event order.
 * Records pending or succeeded are left alone, so a recover while deliveries are in flight sends each failed one
 * once more and nothing twice. With `includeSkipped`, the events it would have received while it was disabled in
 * that range are queued too, at most REPLAY_LIMIT per call (replay.ts). Answers how many of each were queued.
 */
export async function recoverDeliveries(
  sql: Sql,
  companyId: string,
  endpointId: string,
  range: { since: Date; until?: Date },
  opts: { includeSkipped?: boolean; retentionDays: number; replayLimit?: number },
): Promise<RecoverResult> {
  return await sql.begin(async (tx) => {
    // locked until commit: a second recover waits, then finds the replayed events with their records (nothing twice),
    // and a disable waits too, then fails what this one queued
    const [endpoint] = await tx<(ReplayEndpoint & { status: string })[]>`
      select id, status, enabled_events, filter from webhook_endpoints
      where company_id = ${companyId} and id = ${endpointId}
      for no key update`;
    if (!endpoint) throw notFound();
    refuseDisabled(endpoint.status);
    // as text: postgres.js would hand a timestamptz parameter to JavaScript's Date
    const until = range.until ? tx`and inserted_at < ${pgTimestamptz(range.until)}::text::timestamptz` : tx``;
    const rows = await tx<{ id: string }[]>`
      select id from webhook_deliveries
      where company_id = ${companyId} and endpoint_id = ${endpointId} and status = 'failed'
        and inserted_at >= ${pgTimestamptz(range.since)}::text::timestamptz ${until}
      order by id
      for update`;
    await requeue(tx, companyId, endpointId, rows.map((r) => r.id));
    const replay = opts.includeSkipped
      ? await replaySkipped(tx, companyId, endpoint, { ...range, retentionDays: opts.retentionDays }, {
        limit: opts.replayLimit,
      })
      : { skipped: 0, remaining: false };
    if (replay.skipped) await wakeEndpoints(tx, [endpointId]);
    return {
      endpoint_id: endpointId,
      deliveries: rows.length + replay.skipped,
      failed: rows.length,
      skipped: replay.skipped,
      skipped_remaining: replay.remaining,
    };
  });
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
