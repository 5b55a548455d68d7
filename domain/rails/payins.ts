/** Sandbox pay-ins (docs/sandbox.md, "Money in"): money for a subject arrived, one kind of transaction. */
import type { TransactionSql } from "../infra/db.ts";
import { moveMoney } from "./transactions.ts";

export type PayinInput = { subject_id: string; value: string; currency: string; exchange?: boolean | null };

/**
 * Funds for a subject arrived in the integrator's dedicated account: the transaction is identified and, when a
 * conversion was asked for and the money is cleared, it joins the subject's exchange. Nothing follows it in its
 * transaction, so its COMMIT may go with its last statements (`endsTransaction`).
 */
export async function receivePayin(tx: TransactionSql, companyId: string, input: PayinInput) {
  return await moveMoney(tx, companyId, {
    subjectId: input.subject_id,
    kind: "payin",
    status: "identified",
    currency: input.currency,
    value: input.value,
    event: "identified",
    wantsExchange: input.exchange ?? false,
  }, { endsTransaction: true });
}
