/**
 * The operational events (docs/webhooks.md, "Operational events"): `endpoint.failing`, `endpoint.disabled` and
 * `delivery.exhausted`, emitted in the transaction of the change they report, to the company's other endpoints that
 * name the type in their enabled_events (`emitEvent` with `exceptEndpointId`: never to the endpoint they are about).
 * Records of operational events raise no `delivery.exhausted`: two failing endpoints subscribed to it would otherwise
 * tell each other about their failures forever.
 */

import type { TransactionSql } from "../../infra/db.ts";
import { isoUtc } from "../../basics/time.ts";
import { emitEvent, OPERATIONAL_EVENT_TYPES, type OperationalEventType } from "./events.ts";

/** An endpoint as an operational event names it. */
type EndpointAbout = { id: string; company_id: string; url: string };

/** `endpoint.disabled` for an endpoint the caller's transaction has just disabled. */
export async function emitEndpointDisabled(
  tx: TransactionSql,
  e: EndpointAbout & { disabled_reason: string | null; disabled_at: Date | null },
): Promise<void> {
  await emitEvent(tx, e.company_id, "endpoint.disabled", {
    endpoint_id: e.id,
    url: e.url,
    reason: e.disabled_reason ?? "manual",
    disabled_at: isoUtc(e.disabled_at ?? new Date()),
  }, { exceptEndpointId: e.id });
}

/**
 * What one statement of recorded attempts changed (domain/webhooks/engine/statements/record.ts): endpoints whose failing streak
 * crossed the threshold unannounced (with the last failure of the batch), endpoints it disabled, records that failed
 * the last attempt of their schedule. Each names its company.
 */
export type AttemptTransitions = {
  failing: { companyId: string; endpointId: string; lastError: string }[];
  disabled: { companyId: string; endpointId: string }[];
  exhausted: { companyId: string; deliveryId: string }[];
};

function noTransitions(t: AttemptTransitions): boolean {
  return t.failing.length === 0 && t.disabled.length === 0 && t.exhausted.length === 0;
}

type EndpointNow = EndpointAbout & {
  disabled_reason: string | null;
  disabled_at: Date | null;
  failing_since: Date | null;
  consecutive_failures: number;
};

type ExhaustedRecord = {
  id: string;
  company_id: string;
  endpoint_id: string;
  url: string;
  event_id: string;
  type: string;
  attempts: number;
  last_error: string | null;
};

/**
 * Emits the events of `t` in `tx`: failing first, then the exhausted records, then the disabling, the order they
 * happen in. The exhausted records and the disabling must be the changes of `tx` itself. A failing streak is announced
 * by marking it (`failing_alerted_at`) in `tx`: of batches finding the same streak at once, one marks it and emits,
 * and a streak left unmarked (this transaction lost) is found again by the endpoint's next failure. Reads the endpoints
 * and records it names (one statement each, only when there is something to say), and emits nothing for a type that
 * no other active endpoint of the company names, so an outage at a company without subscribers writes no events.
 */
export async function emitAttemptEvents(tx: TransactionSql, t: AttemptTransitions): Promise<void> {
  if (noTransitions(t)) return;
  const announced = t.failing.length === 0 ? [] : await tx<EndpointNow[]>`
    update webhook_endpoints e set failing_alerted_at = now()
    from unnest(${t.failing.map((k) => k.companyId)}::uuid[], ${t.failing.map((k) => k.endpointId)}::uuid[])
      as k(company_id, id)
    where e.company_id = k.company_id and e.id = k.id and e.status = 'active' and e.failing_alerted_at is null
      and e.consecutive_failures > 0
    returning e.id, e.company_id, e.url, e.disabled_reason, e.disabled_at, e.failing_since, e.consecutive_failures`;
  const keys = t.disabled;
  const endpoints = keys.length === 0 ? [] : await tx<EndpointNow[]>`
    select e.id, e.company_id, e.url, e.disabled_reason, e.disabled_at, e.failing_since, e.consecutive_failures
    from webhook_endpoints e
    join unnest(${keys.map((k) => k.companyId)}::uuid[], ${keys.map((k) => k.endpointId)}::uuid[]) as k(company_id, id)
      on e.company_id = k.company_id and e.id = k.id`;
  const exhausted = t.exhausted.length === 0 ? [] : await tx<ExhaustedRecord[]>`
    select d.id, d.company_id, d.endpoint_id, e.url, d.event_id, d.type, d.attempts, d.last_error
    from webhook_deliveries d
    join unnest(${t.exhausted.map((x) => x.companyId)}::uuid[], ${t.exhausted.map((x) => x.deliveryId)}::uuid[])
      as k(company_id, id) on d.company_id = k.company_id and d.id = k.id
    join webhook_endpoints e on e.company_id = d.company_id and e.id = d.endpoint_id
    where d.type <> all(${[...OPERATIONAL_EVENT_TYPES]}::text[])
    order by d.id`;
  const wanted = await subscribers(tx, [
    ...announced.map((e) => e.company_id),
    ...keys.map((k) => k.companyId),
    ...exhausted.map((x) => x.company_id),
  ]);
  const wants = (companyId: string, type: OperationalEventType, aboutId: string) =>
    wanted.some((s) => s.company_id === companyId && s.id !== aboutId && s.enabled_events.includes(type));
  const byId = new Map(endpoints.map((e) => [e.id, e]));

  const lastError = new Map(t.failing.map((f) => [f.endpointId, f.lastError]));
  for (const e of announced) {
    if (!wants(e.company_id, "endpoint.failing", e.id)) continue;
    await emitEvent(tx, e.company_id, "endpoint.failing", {
      endpoint_id: e.id,
      url: e.url,
      // null only when another attempt cleared the clock meanwhile: the streak began with this batch
      failing_since: isoUtc(e.failing_since ?? new Date()),
      consecutive_failures: e.consecutive_failures,
      last_error: lastError.get(e.id) ?? "failed",
    }, { exceptEndpointId: e.id });
  }
  for (const x of exhausted) {
    if (!wants(x.company_id, "delivery.exhausted", x.endpoint_id)) continue;
    await emitEvent(tx, x.company_id, "delivery.exhausted", {
      delivery_id: x.id,
      endpoint_id: x.endpoint_id,
      url: x.url,
      event_id: x.event_id,
      event_type: x.type,
      attempts: x.attempts,
      last_error: x.last_error ?? "failed",
    }, { exceptEndpointId: x.endpoint_id });
  }
  for (const d of t.disabled) {
    const e = byId.get(d.endpointId);
    if (!e || !wants(e.company_id, "endpoint.disabled", e.id)) continue;
    await emitEndpointDisabled(tx, e);
  }
}

/** The active endpoints of these companies that name an operational type. */
async function subscribers(tx: TransactionSql, companyIds: string[]) {
  if (companyIds.length === 0) return [];
  return await tx<{ id: string; company_id: string; enabled_events: string[] }[]>`
    select id, company_id, enabled_events from webhook_endpoints
    where company_id = any(${[...new Set(companyIds)]}::uuid[]) and status = 'active'
      and enabled_events && ${[...OPERATIONAL_EVENT_TYPES]}::text[]`;
}
