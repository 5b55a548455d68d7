/** Sandbox card payments (docs/sandbox.md, "Money in"): the card network's answer, one kind of transaction. */
import type { TransactionSql } from "../infra/db.ts";
import { moveMoney } from "./transactions.ts";

export type CardPaymentInput = { subject_id: string; value: string; currency: string; outcome: "approved" | "failed" };

/** The card network's answer to a payment by the subject: approved money counts and may be held like any other. */
export async function recordCardPayment(tx: TransactionSql, companyId: string, input: CardPaymentInput) {
  return await moveMoney(tx, companyId, {
    subjectId: input.subject_id,
    kind: "card_payment",
    status: input.outcome,
    currency: input.currency,
    value: input.value,
    event: input.outcome === "approved" ? "payment_approved" : "payment_failed",
  });
}
