import type { TransactionSql } from "../infra/db.ts";
import { newId } from "../basics/ids.ts";
import { notifyWake } from "./delivery/wake.ts";

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
] as const;
export type EventType = typeof EVENT_TYPES[number];

/**
 * The one way to emit an event. Call it with the transaction of the state change that caused it:
 * the event, its delivery records and their wake-ups commit or roll back together with that change.
 *
 * Fan-out: one delivery record per ACTIVE endpoint of the company that enables the type, due at once, and a wake-up
 * of each of those endpoints (domain/webhooks/delivery/wake.ts), sent at commit. It takes a transaction, never the
 * pool: the event never exists without its deliveries, nor they without the change that caused them.
 * `onlyEndpointId` narrows the fan-out to that one endpoint (a test event).
 */
export async function emitEvent(
  tx: TransactionSql,
  companyId: string,
  type: EventType,
  data: Record<string, unknown>,
  opts: { onlyEndpointId?: string } = {},
): Promise<{ id: string }> {
  const id = newId();
  const only = opts.onlyEndpointId ? tx`and id = ${opts.onlyEndpointId}` : tx``;
  const endpoints = await tx<{ id: string }[]>`
    select id from webhook_endpoints
    where company_id = ${companyId} and status = 'active' and enabled_events && array['*', ${type}]::text[] ${only}
    order by id`;
  const json = tx.json(data as never);
  if (endpoints.length === 0) {
    await tx`insert into events (id, company_id, type, data) values (${id}, ${companyId}, ${type}, ${json})`;
    return { id };
  }
  const endpointIds = endpoints.map((e) => e.id);
  await tx`
    with event as (
      insert into events (id, company_id, type, data) values (${id}, ${companyId}, ${type}, ${json})
      returning inserted_at
    ), woken as (
      select ${notifyWake(tx, tx`select unnest(${endpointIds}::uuid[])`)}
    )
    insert into webhook_deliveries (id, company_id, event_id, endpoint_id, type, next_attempt_at, inserted_at)
    select d.id, ${companyId}, ${id}, d.endpoint_id, ${type}, event.inserted_at, event.inserted_at
    from unnest(${endpointIds.map(() => newId())}::uuid[], ${endpointIds}::uuid[]) as d(id, endpoint_id)
    cross join event
    cross join woken`;
  return { id };
}
