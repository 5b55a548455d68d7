import type { TransactionSql } from "../platform/db.ts";
import { ErrorBag } from "../platform/errors.ts";
import { getBankAccount } from "../bank_accounts/bank_accounts.ts";
import { forwardCleared, getTransaction, recordTransaction } from "./transactions.ts";
import { failWire, type WireErrorCode } from "./wires.ts";

export type PayoutInput = {
  subject_id: string;
  bank_account_id: string;
  value: string;
  currency: string;
  fail_with?: WireErrorCode | null;
};

/**
 * The integrator pays a subject out to a bank account: the transaction is identified and, once cleared, leaves
 * in the wire to that account; `fail_with` plays the receiving bank refusing the account data.
 * The account is the subject's own or one of the company's international accounts.
 */
export async function sendPayout(tx: TransactionSql, companyId: string, input: PayoutInput) {
  const account = await getBankAccount(tx, companyId, input.bank_account_id);
  if (account.subject_id && account.subject_id !== input.subject_id) {
    const bag = new ErrorBag();
    bag.add("bank_account_id", "does not belong to the subject");
    bag.throwIfAny(422);
  }
  const row = await recordTransaction(tx, companyId, {
    subjectId: input.subject_id,
    kind: "payout",
    status: "identified",
    currency: input.currency,
    value: input.value,
    bankAccountId: input.bank_account_id,
  }, "identified");
  if (row.cleared && input.fail_with) {
    await failWire(tx, companyId, row.subject_id, input.bank_account_id, row.currency, [row.id], input.fail_with);
  } else {
    await forwardCleared(tx, companyId, [row]);
  }
  return await getTransaction(tx, companyId, row.id);
}
