/**
 * Automatic PIX subscriptions of the sandbox (docs/sandbox.md, "Subscriptions"): the QR code, invoices, cancellation
 * and their events. Invoices record no transaction, so nothing here goes through `moveMoney`.
 */
import type { SqlOrTransaction, TransactionSql } from "../infra/db.ts";
import { notFound, validationFailed } from "../basics/errors.ts";
import { newId } from "../basics/ids.ts";
import { naiveUtc } from "../basics/time.ts";
import { emitEvent } from "../webhooks/outbox/events.ts";
import { brCode } from "./pix_qr.ts";
import { lockSubject } from "../subjects/status.ts";

export type SubscriptionRow = {
  id: string;
  company_id: string;
  subject_id: string;
  status: "pending" | "active" | "canceled" | "completed";
  cycles: number;
  paid_cycles: number;
  qr_code: string;
  canceled_by_payer: boolean;
  canceled_reason: string;
  inserted_at: Date;
  updated_at: Date;
};

export type InvoiceRow = {
  id: string;
  subscription_id: string;
  subject_id: string;
  cycle: number;
  status: "paid";
  inserted_at: Date;
};

/** What the sandbox answers for a subscription; events carry only their documented keys (docs/sandbox.md), below. */
export function presentSubscription(s: SubscriptionRow, invoice?: InvoiceRow) {
  return {
    id: s.id,
    status: s.status,
    subject_id: s.subject_id,
    qr_code: s.qr_code,
    cycles: s.cycles,
    paid_cycles: s.paid_cycles,
    canceled_by_payer: s.canceled_by_payer,
    canceled_reason: s.canceled_reason,
    ...(invoice ? { invoice: presentInvoice(invoice) } : {}),
    inserted_at: naiveUtc(s.inserted_at),
    updated_at: naiveUtc(s.updated_at),
  };
}

const presentInvoice = (i: InvoiceRow) => ({
  id: i.id,
  status: i.status,
  subject_id: i.subject_id,
  subscription_id: i.subscription_id,
});

const brief = (s: SubscriptionRow) => ({ id: s.id, status: s.status, subject_id: s.subject_id });

/** An automatic PIX subscription whose QR code awaits the payer's authorization. */
export async function createSubscription(
  tx: TransactionSql,
  companyId: string,
  input: { subject_id: string; cycles: number },
) {
  await lockSubject(tx, companyId, input.subject_id);
  const id = newId();
  const [row] = await tx<SubscriptionRow[]>`
    insert into subscriptions ${
    tx({
      id,
      company_id: companyId,
      subject_id: input.subject_id,
      status: "pending",
      cycles: input.cycles,
      qr_code: brCode({ url: `pix.sandbox.example/rec/${id}`, txid: id, recurring: true }),
    })
  }
    returning *`;
  await emitEvent(tx, companyId, "subscription_qr_code_generated", {
    subscription: { ...brief(row), qr_code: row.qr_code },
  });
  return row;
}

async function lockSubscription(tx: TransactionSql, companyId: string, id: string) {
  const [row] = await tx<SubscriptionRow[]>`
    select * from subscriptions where company_id = ${companyId} and id = ${id} for update`;
  if (!row) throw notFound();
  return row;
}

function refuse(status: string): never {
  throw validationFailed({ status: [`is ${status}`] }, 422);
}

/**
 * The next invoice of the subscription is paid. The first one activates the subscription; the one that
 * completes the cycles completes it.
 */
export async function payInvoice(tx: TransactionSql, companyId: string, id: string) {
  const sub = await lockSubscription(tx, companyId, id);
  if (sub.status === "canceled" || sub.status === "completed") refuse(sub.status);
  const cycle = sub.paid_cycles + 1;
  const [invoice] = await tx<InvoiceRow[]>`
    insert into invoices (id, company_id, subscription_id, subject_id, cycle, status)
    values (${newId()}, ${companyId}, ${sub.id}, ${sub.subject_id}, ${cycle}, 'paid')
    returning *`;
  await emitEvent(tx, companyId, "invoice_paid", { invoice: presentInvoice(invoice) });
  let row = await setStatus(tx, companyId, sub, sub.status === "pending" ? "active" : sub.status, cycle);
  if (sub.status === "pending") await emitEvent(tx, companyId, "subscription_activated", { subscription: brief(row) });
  if (cycle >= sub.cycles) {
    row = await setStatus(tx, companyId, row, "completed", cycle);
    await emitEvent(tx, companyId, "subscription_completed", { subscription: brief(row) });
  }
  return { subscription: row, invoice };
}

async function setStatus(
  tx: SqlOrTransaction,
  companyId: string,
  sub: SubscriptionRow,
  status: string,
  paidCycles: number,
) {
  const [row] = await tx<SubscriptionRow[]>`
    update subscriptions set status = ${status}, paid_cycles = ${paidCycles}, updated_at = now()
    where company_id = ${companyId} and id = ${sub.id}
    returning *`;
  return row;
}

/** Cancelled by the merchant (the integrator) or by the payer in their bank app. */
export async function cancelSubscription(
  tx: TransactionSql,
  companyId: string,
  id: string,
  input: { by_payer?: boolean | null; reason?: string | null },
) {
  const sub = await lockSubscription(tx, companyId, id);
  if (sub.status === "canceled") refuse(sub.status);
  const [row] = await tx<SubscriptionRow[]>`
    update subscriptions set status = 'canceled', canceled_by_payer = ${input.by_payer ?? false},
                             canceled_reason = ${input.reason ?? ""}, updated_at = now()
    where company_id = ${companyId} and id = ${id}
    returning *`;
  await emitEvent(tx, companyId, "subscription_canceled", {
    subscription: {
      canceled_by_payer: row.canceled_by_payer,
      canceled_reason: row.canceled_reason,
      id: row.id,
      status: row.status,
      subject_id: row.subject_id,
    },
  });
  return row;
}
