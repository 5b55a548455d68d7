/**
 * Wires: the day's batch of cleared pay-outs of one subject to one account (over batches.ts), the receiving bank's
 * refusal, and the integrator's correction of the account (docs/sandbox.md, "Money out").
 */
import type { SqlOrTransaction, TransactionSql } from "../infra/db.ts";
import { ErrorBag, notFound } from "../basics/errors.ts";
import { newId } from "../basics/ids.ts";
import { naiveUtc } from "../basics/time.ts";
import {
  checkBankAccountPatch,
  getBankAccount,
  patchBankAccount,
  presentBankAccount,
} from "../bank_accounts/bank_accounts.ts";
import type { BankAccountInput } from "../bank_accounts/rules.ts";
import { emitEvent } from "../webhooks/outbox/events.ts";
import { announceBatch, batchMembers, fillBatch, joinBatch } from "./batches.ts";
import { TASKS } from "../infra/tasks.ts";

export const WIRE_ERROR_CODES = ["AC03", "AC14", "CH11", "AG03"] as const;
export type WireErrorCode = typeof WIRE_ERROR_CODES[number];

/** Receiver-data errors a wire can come back with (docs/sandbox.md, Money out). */
export const WIRE_ERRORS: Record<WireErrorCode, string> = {
  AC03: "Creditor account number invalid or missing",
  AC14: "Creditor account type missing or invalid",
  CH11: "Creditor identifier incorrect",
  AG03: "Transaction type not supported or authorized on this account",
};

export type WireRow = {
  id: string;
  company_id: string;
  subject_id: string;
  bank_account_id: string;
  currency: string;
  value: string;
  status: "sent" | "waiting_correction" | "waiting_confirmation";
  error_code: WireErrorCode | null;
  error_description: string | null;
  unretryable: boolean;
  to_bank_account: Record<string, unknown>;
  inserted_at: Date;
  updated_at: Date;
};

/** The wire record (answer of the bank-account correction, docs/sandbox.md). */
export function presentWire(w: WireRow) {
  return {
    id: w.id,
    currency: w.currency,
    value: w.value,
    status: w.status,
    inserted_at: naiveUtc(w.inserted_at),
    unretryable: w.unretryable,
    to_bank_account: w.to_bank_account,
  };
}

/** GET /api/v1/wires/:id: the wire with the transactions it carries (404 for another company's). */
export async function getWireView(sql: SqlOrTransaction, companyId: string, id: string) {
  const [w] = await sql<(WireRow & { transaction_ids: string[] })[]>`
    select w.*, coalesce(array(
      select t.id from transactions t where t.company_id = ${companyId} and t.wire_id = w.id order by t.id
    ), '{}') as transaction_ids
    from wires w where w.company_id = ${companyId} and w.id = ${id}`;
  if (!w) throw notFound();
  return {
    id: w.id,
    status: w.status,
    value: w.value,
    currency: w.currency,
    bank_account_id: w.bank_account_id,
    transaction_ids: w.transaction_ids,
    error_code: w.error_code,
    inserted_at: naiveUtc(w.inserted_at),
  };
}

/**
 * The destination as the wire carries it: the bank account object, plus the `company` sub-object of the wire
 * record (the integrator's profile; fields it does not keep are null).
 */
async function destinationSnapshot(tx: SqlOrTransaction, companyId: string, bankAccountId: string) {
  // the account row already carries the company profile (owner_company): no second query for it
  const account = await getBankAccount(tx, companyId, bankAccountId);
  return {
    snapshot: {
      ...presentBankAccount(account),
      company: {
        company_name: account.company_social_name,
        document_number: account.company_document_number,
        document_type: account.company_document_type,
        fiscal_country: null,
        id: account.company_id,
        phone_number: null,
        social_name: account.company_social_name,
      },
    },
    ownerId: account.subject_id ?? companyId,
  };
}

/** Cleared payouts of one subject, in one currency, to one account. */
export type WireBatch = { subjectId: string; bankAccountId: string; currency: string; transactionIds: string[] };

/**
 * Sends cleared payouts of one subject to one account: they join the day's open wire to that account (one
 * wire carrying the total), or a new one. `wire_created` lists every transaction the wire now carries.
 */
export async function attachToWire(tx: TransactionSql, companyId: string, batch: WireBatch) {
  const { subjectId, bankAccountId, currency } = batch;
  return await joinBatch(tx, "wires", companyId, {
    // a wire that once waited for a correction is not reopened for new payouts
    match: tx`subject_id = ${subjectId} and bank_account_id = ${bankAccountId} and currency = ${currency}
              and status = 'sent' and error_code is null`,
    create: async () => {
      const { snapshot } = await destinationSnapshot(tx, companyId, bankAccountId);
      const [created] = await tx<{ id: string }[]>`
        insert into wires (id, company_id, subject_id, bank_account_id, currency, status, to_bank_account)
        values (${newId()}, ${companyId}, ${subjectId}, ${bankAccountId}, ${currency}, 'sent', ${tx.json(snapshot)})
        returning id`;
      return created.id;
    },
    transactionIds: batch.transactionIds,
    status: "wired",
  });
}

/** The receiving bank refused the account data: the wire waits for the integrator to correct it. */
export async function failWire(tx: TransactionSql, companyId: string, batch: WireBatch & { errorCode: WireErrorCode }) {
  const { subjectId, bankAccountId, currency, errorCode } = batch;
  const { snapshot, ownerId } = await destinationSnapshot(tx, companyId, bankAccountId);
  const [wire] = await tx<{ id: string }[]>`
    insert into wires (id, company_id, subject_id, bank_account_id, currency, status, error_code, error_description,
                       to_bank_account)
    values (${newId()}, ${companyId}, ${subjectId}, ${bankAccountId}, ${currency}, 'waiting_correction',
            ${errorCode}, ${WIRE_ERRORS[errorCode]}, ${tx.json(snapshot)})
    returning id`;
  const members = await fillBatch(tx, "wires", companyId, wire.id, batch.transactionIds, "waiting_correction");
  await emitEvent(tx, companyId, "wire_waiting_correction", {
    error_code: errorCode,
    error_description: WIRE_ERRORS[errorCode],
    bank_account_owner_id: ownerId,
    bank_account_id: bankAccountId,
    transaction_ids: members,
    wire_id: wire.id,
  });
  return wire.id;
}

async function lockWire(tx: TransactionSql, companyId: string, wireId: string): Promise<WireRow> {
  const [wire] = await tx<WireRow[]>`
    select * from wires where company_id = ${companyId} and id = ${wireId} for update`;
  if (!wire) throw notFound();
  return wire;
}

/**
 * PUT /wires/:id/update_bank_account: the corrected data replaces the destination account's (checked by the
 * rules of its currency, as an account update would be), the wire carries the corrected account and waits for
 * the rails to confirm the retry, which is queued in the same transaction. Only a wire waiting for correction
 * accepts it.
 */
export async function correctWire(
  tx: TransactionSql,
  companyId: string,
  wireId: string,
  correction: BankAccountInput,
): Promise<WireRow> {
  const wire = await lockWire(tx, companyId, wireId);
  await checkCorrection(tx, companyId, wire, correction);
  await patchBankAccount(tx, companyId, wire.bank_account_id, correction);
  const { snapshot } = await destinationSnapshot(tx, companyId, wire.bank_account_id);
  const [saved] = await tx<WireRow[]>`
    update wires set status = 'waiting_confirmation', to_bank_account = ${tx.json(snapshot)}, updated_at = now()
    where company_id = ${companyId} and id = ${wireId}
    returning *`;
  await tx`select graphile_worker.add_job(${TASKS.retryWire},
             json_build_object('company_id', ${companyId}::text, 'wire_id', ${wireId}::text),
             job_key := ${`${TASKS.retryWire}:${wireId}`}, max_attempts := 5)`;
  return saved;
}

/** The rules a correction of the wire meets, without writing (an unknown wire is 404). */
export async function checkWireCorrection(
  tx: SqlOrTransaction,
  companyId: string,
  wireId: string,
  correction: BankAccountInput,
) {
  const [wire] = await tx<WireRow[]>`select * from wires where company_id = ${companyId} and id = ${wireId}`;
  if (!wire) throw notFound();
  await checkCorrection(tx, companyId, wire, correction);
}

/**
 * Every reason to refuse a correction at once: a wire that does not wait for one, and what the corrected account
 * breaks of its currency's rules.
 */
async function checkCorrection(tx: SqlOrTransaction, companyId: string, wire: WireRow, correction: BankAccountInput) {
  const errors = new ErrorBag();
  if (wire.status !== "waiting_correction") errors.add("status", "is not waiting_correction");
  const account = await getBankAccount(tx, companyId, wire.bank_account_id);
  await errors.collect(() => checkBankAccountPatch(tx, companyId, account, correction));
  errors.throwIfAny();
}

/** The rails accept the corrected wire: it is sent and its transactions with it. */
export async function retryWire(tx: TransactionSql, companyId: string, wireId: string): Promise<boolean> {
  const wire = await lockWire(tx, companyId, wireId);
  if (wire.status !== "waiting_confirmation") return false;
  await tx`update wires set status = 'sent', updated_at = now() where company_id = ${companyId} and id = ${wireId}`;
  await tx`update transactions set status = 'wired', updated_at = now()
           where company_id = ${companyId} and wire_id = ${wireId}`;
  await announceBatch(tx, "wires", companyId, wireId, await batchMembers(tx, "wires", companyId, wireId));
  return true;
}
