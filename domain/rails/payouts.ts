/**
 * Sandbox pay-outs (docs/sandbox.md, "Money out"): money for a subject sent to a bank account, one kind of
 * transaction, which leaves in a wire (wires.ts).
 */
import type { SqlOrTransaction, TransactionSql } from "../infra/db.ts";
import { ErrorBag } from "../basics/errors.ts";
import { getBankAccount } from "../bank_accounts/bank_accounts.ts";
import { moveMoney } from "./transactions.ts";
import type { WireErrorCode } from "./wires.ts";
import { bankRefusal } from "./sandbox_outcomes.ts";

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
  const account = await checkPayout(tx, companyId, input);
  return await moveMoney(tx, companyId, {
    subjectId: input.subject_id,
    kind: "payout",
    status: "identified",
    currency: input.currency,
    value: input.value,
    event: "identified",
    bankAccountId: input.bank_account_id,
    // `fail_with` first; without it, an account number the sandbox's bank refuses (docs/sandbox.md, "Magic values")
    wireError: input.fail_with ?? bankRefusal(account?.account_number ?? null),
  });
}

/**
 * The account must be the subject's own or one of the company's (an unknown one is 404). Fields left out are
 * not judged, so a body whose shape failed can still be checked on the rest. Answers the account (null without one).
 */
export async function checkPayout(tx: SqlOrTransaction, companyId: string, input: Partial<PayoutInput>) {
  if (!input.bank_account_id) return null;
  const account = await getBankAccount(tx, companyId, input.bank_account_id);
  if (account.subject_id && input.subject_id && account.subject_id !== input.subject_id) {
    const bag = new ErrorBag();
    bag.add("bank_account_id", "does not belong to the subject");
    bag.throwIfAny(422);
  }
  return account;
}
