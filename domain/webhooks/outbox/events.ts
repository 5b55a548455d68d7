/**
 * The outbox: every event type, and `emitEvent`, the one way to emit an event, which writes it with its delivery records
 * and wake-ups in the transaction of the change that caused it (docs/webhooks.md, "From a change to a delivery record").
 */

import type postgres from "postgres";
import type { TransactionSql } from "../../infra/db.ts";
import { newId } from "../../basics/ids.ts";
import { notifyWake } from "./wake.ts";
import { currentTraceparent } from "../../infra/tracing.ts";
import { decideFilters } from "./filters.ts";
import { type FilterCount, recordFilterCounts } from "./filter_errors.ts";
import { deferralRoom, DEFERRALS_FULL, noteDeferred, writeDeferred } from "./filter_deferrals.ts";
import { metrics } from "../../infra/metrics.ts";

/** Every event type (docs/webhooks.md, Bodies). */
export const EVENT_TYPES = [
  "identified",
  "exchange_created",
  "wire_created",
  "payment_approved",
  "payment_failed",
  "wire_waiting_correction",
  "payment_refunded",
  "payment_expired",
  "non_identified_bank_transaction",
  "subject_approved",
  "subject_reproved",
  "document_required",
  "subscription_qr_code_generated",
  "subscription_activated",
  "subscription_canceled",
  "subscription_completed",
  "invoice_paid",
  // operational events: about the webhooks themselves, opt-in (OPERATIONAL_EVENT_TYPES)
  "endpoint.failing",
  "endpoint.disabled",
  "delivery.exhausted",
] as const;
export type EventType = typeof EVENT_TYPES[number];

/**
 * The operational events (docs/webhooks.md, "Operational events"): what happens to a company's webhooks, emitted by
 * domain/webhooks/outbox/operational.ts. An endpoint gets them only when its enabled_events names them: `"*"` does not take
 * them in, so an endpoint registered before they existed receives nothing new.
 */
export const OPERATIONAL_EVENT_TYPES = ["endpoint.failing", "endpoint.disabled", "delivery.exhausted"] as const;
export type OperationalEventType = typeof OPERATIONAL_EVENT_TYPES[number];

export function isOperational(type: string): type is OperationalEventType {
  return (OPERATIONAL_EVENT_TYPES as readonly string[]).includes(type);
}

/** Whether an endpoint with these enabled_events gets events of `type`: named, or `"*"` for all but operational ones. */
export function enables(enabledEvents: readonly string[], type: EventType): boolean {
  return enabledEvents.includes(type) || (enabledEvents.includes("*") && !isOperational(type));
}

/** Which endpoints an event may go to besides its type: one only (a test event), or all but one (operational). */
type FanOut = { onlyEndpointId?: string; exceptEndpointId?: string };
/** An endpoint that takes an event's type, with its filter (filters.ts): emitEvent evaluates it. */
export type Subscriber = { id: string; filter: string | null };

/**
 * The active endpoints of the company that take events of `type`. The statement is sent when the answer is first
 * awaited: a caller that knows the event it will emit can send it with its own earlier statements, in one pipelined
 * round trip, and hand it to `emitEvent` as `subscribers` (the pay-in does: docs/performance.md, "What changed").
 */
export function subscribersOf(tx: TransactionSql, companyId: string, type: EventType, opts: FanOut = {}) {
  return tx<Subscriber[]>`
    select id, filter from webhook_endpoints where ${subscribing(tx, companyId, type, opts)} order by id`;
}

/**
 * `subscribersOf` as one column of a statement the caller sends anyway (a JSON array of `Subscriber`, in the same
 * order), so the money path reads them without a statement of their own (docs/performance.md, "The money path").
 */
export function subscribersColumn(tx: TransactionSql, companyId: string, type: EventType): postgres.Fragment {
  return tx`coalesce((
      select json_agg(json_build_object('id', id, 'filter', filter) order by id) from webhook_endpoints
      where ${subscribing(tx, companyId, type, {})}
    ), '[]'::json)`;
}

/** Which endpoints of the company an event of `type` goes to, as a WHERE condition: one rule for both reads above. */
function subscribing(tx: TransactionSql, companyId: string, type: EventType, opts: FanOut): postgres.Fragment {
  const only = opts.onlyEndpointId ? tx`and id = ${opts.onlyEndpointId}` : tx``;
  const except = opts.exceptEndpointId ? tx`and id <> ${opts.exceptEndpointId}` : tx``;
  const wanted = isOperational(type) ? tx`array[${type}]::text[]` : tx`array['*', ${type}]::text[]`;
  return tx`company_id = ${companyId} and status = 'active' and enabled_events && ${wanted} ${only} ${except}`;
}

/**
 * The one way to emit an event. Call it with the transaction of the state change that caused it:
 * the event, its delivery records and their wake-ups commit or roll back together with that change.
 *
 * Fan-out: one delivery record per ACTIVE endpoint of the company that enables the type, due at once, and a wake-up
 * of each of those endpoints (domain/webhooks/outbox/wake.ts), sent at commit. It takes a transaction, never the
 * pool: the event never exists without its deliveries, nor they without the change that caused them.
 * `onlyEndpointId` narrows the fan-out to that one endpoint (a test event); `exceptEndpointId` leaves one out (an
 * operational event is never sent to the endpoint it is about). An operational type goes only to endpoints that name
 * it (`enables`).
 *
 * An endpoint with a `filter` gets a record only when its filter gives true for this event (filters.ts), evaluated
 * here, once, from the row the same select reads, within the filter's budget (filter_budget.ts): nothing more for
 * endpoints without one, and a statement more only when a filter errs (its count, filter_errors.ts). An endpoint
 * whose filter the company's filter time could not pay for now (filter_time.ts) gets its record all the same, waiting
 * for the engine to decide it (filter_deferrals.ts), with its count and the job that decides it. A test event
 * ignores filters: it was asked for by name (docs/webhooks.md, "Filters").
 *
 * `subscribers`: the endpoints as `subscribersOf` read them, when the caller asked for them already, in a round trip
 * it was making anyway (the money path's first: docs/performance.md); otherwise they are read here. With them, every
 * statement of the event is handed to the connection before this returns (`execute()`), so a caller may queue COMMIT
 * right behind it (`commitNow` in domain/infra/db.ts).
 */
export function emitEvent(
  tx: TransactionSql,
  companyId: string,
  type: EventType,
  data: Record<string, unknown>,
  opts: FanOut & { subscribers?: Subscriber[] } = {},
): Promise<{ id: string }> {
  const given = opts.subscribers;
  if (!given) {
    return subscribersOf(tx, companyId, type, opts).then((subscribers) =>
      emitEvent(tx, companyId, type, data, { ...opts, subscribers })
    );
  }
  const id = newId();
  const { passing: endpoints, errors, deferred: wanting } = opts.onlyEndpointId
    ? { passing: given, errors: [], deferred: [] }
    : filtered(companyId, given, type, data);
  // the company's waiting records are bounded: past it, not evaluated, a counted error (filter_deferrals.ts)
  const room = wanting.length > 0 ? deferralRoom(companyId) : 0;
  const deferred = wanting.slice(0, room);
  for (const e of wanting.slice(room)) errors.push({ endpointId: e.id, message: DEFERRALS_FULL });
  if (deferred.length > 0) noteDeferred(companyId, deferred.length);
  if (deferred.length < wanting.length) metrics.filterErrors.inc({}, wanting.length - deferred.length);
  // counted with the event, in its transaction, without waiting on another's count (filter_errors.ts)
  const counts: FilterCount[] = [
    ...errors.map((e) => ({ endpointId: e.endpointId, message: e.message })),
    ...deferred.map((e) => ({ endpointId: e.id, deferred: 1 })),
  ];
  const counted = counts.length > 0 ? recordFilterCounts(tx, companyId, counts) : null;
  // the company's filter time was spent: their records are written waiting for the engine's verdict
  const waiting = deferred.length > 0
    ? writeDeferred(tx, companyId, id, type, deferred.map((e) => ({ id: newId(), endpointId: e.id })))
    : null;
  const json = tx.json(data as never);
  // the request's trace, which the deliveries continue (null when tracing is off: docs/webhooks.md, "Tracing")
  const trace = currentTraceparent();
  const endpointIds = endpoints.map((e) => e.id);
  // the event and its delivery records in one statement (none when no endpoint takes it)
  const inserted = endpointIds.length === 0
    ? tx`
      insert into events (id, company_id, type, data, traceparent) values (${id}, ${companyId}, ${type}, ${json}, ${trace})`
      .execute()
    : tx`
    with event as (
      insert into events (id, company_id, type, data, traceparent)
      values (${id}, ${companyId}, ${type}, ${json}, ${trace})
      returning inserted_at
    ), woken as (
      select ${notifyWake(tx, tx`select unnest(${endpointIds}::uuid[])`)}
    )
    insert into webhook_deliveries (id, company_id, event_id, endpoint_id, type, next_attempt_at, inserted_at)
    select d.id, ${companyId}, ${id}, d.endpoint_id, ${type}, event.inserted_at, event.inserted_at
    from unnest(${endpointIds.map(() => newId())}::uuid[], ${endpointIds}::uuid[]) as d(id, endpoint_id)
    cross join event
    cross join woken`.execute();
  return Promise.all([counted, inserted, waiting]).then(() => ({ id }));
}

/**
 * The endpoints whose filter passes, or that have none, and the errors of the filters that could not say, within
 * their budget (filters.ts, `decideFilters`), and those deferred for want of the company's filter time. The filters see
 * the data as stored and as the snapshot body carries it (a JSON round trip, made only when some endpoint has a
 * filter): the same values the receiver reads.
 */
function filtered<E extends { id: string; filter: string | null }>(
  companyId: string,
  endpoints: E[],
  type: EventType,
  data: Record<string, unknown>,
) {
  if (!endpoints.some((e) => e.filter !== null)) return { passing: endpoints, errors: [], deferred: [] };
  return decideFilters(companyId, endpoints, type, JSON.parse(JSON.stringify(data)));
}
