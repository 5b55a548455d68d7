import type { Tx } from "../lib/db.ts";
import { newId } from "../lib/ids.ts";

/** Every event type of interface.md "Events". */
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
 * the event, its delivery records and their jobs commit or roll back together with that change.
 */
export async function emitEvent(
  tx: Tx,
  companyId: string,
  type: EventType,
  data: Record<string, unknown>,
): Promise<{ id: string }> {
  const id = newId();
  await tx`insert into events (id, company_id, type, data) values (${id}, ${companyId}, ${type}, ${tx.json(data as never)})`;
  // TODO(webhooks issue): fan out to endpoints, create delivery records, enqueue their jobs.
  return { id };
}
