/**
 * Money from a payer the integrator has not registered: it waits, and becomes the person's identified pay-ins once
 * they are registered (`registerPayer`), with a periodic sweep as the safety net.
 */
import type { Sql, SqlOrTransaction, TransactionSql } from "../infra/db.ts";
import { ErrorBag } from "../basics/errors.ts";
import { newId } from "../basics/ids.ts";
import { isoUtc } from "../basics/time.ts";
import { emitEvent } from "../webhooks/outbox/events.ts";
import { type PersonCreateInput, registerPerson } from "../subjects/people.ts";
import { getSubjectOf } from "../subjects/subjects.ts";
import type { StoredQuotas } from "../subjects/quotas.ts";
import type { DocumentType } from "../subjects/person_rules.ts";
import { checkTaxId } from "../basics/tax_ids.ts";
import { moveMoney } from "./transactions.ts";

export type PayerBankAccount = {
  bank?: string | null;
  branch_number?: string | null;
  account_number?: string | null;
  account_type?: string | null;
};

export type BankTransactionInput = {
  value: string;
  currency: string;
  payer: { document_number: string; document_type: DocumentType; name: string; bank_account?: PayerBankAccount | null };
  spei_concepto_de_pago?: string | null;
};

export type BankTransactionRow = {
  id: string;
  company_id: string;
  value: string;
  currency: string;
  movement_date: string;
  bank_account_id: string;
  paid_at: Date;
  spei_concepto_de_pago: string | null;
  payer_document_type: string;
  payer_document_number: string;
  payer_name: string;
  payer_bank_account: Required<PayerBankAccount>;
  status: "pending" | "identified";
  transaction_id: string | null;
};

/** The bank_transaction object of the non_identified_bank_transaction event, exactly. */
export function presentBankTransaction(b: BankTransactionRow) {
  return {
    id: b.id,
    value: b.value,
    currency: b.currency,
    movement_date: b.movement_date,
    bank_account_id: b.bank_account_id,
    paid_at: isoUtc(b.paid_at),
    ...(b.currency === "MXN" && b.spei_concepto_de_pago ? { spei_concepto_de_pago: b.spei_concepto_de_pago } : {}),
    subject: {
      document_number: b.payer_document_number,
      document_type: b.payer_document_type,
      name: b.payer_name,
      bank_account: {
        bank: b.payer_bank_account.bank,
        branch_number: b.payer_bank_account.branch_number,
        account_number: b.payer_bank_account.account_number,
        account_type: b.payer_bank_account.account_type,
      },
    },
  };
}

/** The integrator's dedicated receiving account in a currency, opened on first use. */
async function dedicatedAccount(tx: TransactionSql, companyId: string, currency: string): Promise<string> {
  await tx`insert into dedicated_accounts (id, company_id, currency) values (${newId()}, ${companyId}, ${currency})
           on conflict (company_id, currency) do nothing`;
  const [row] = await tx<{ id: string }[]>`
    select id from dedicated_accounts where company_id = ${companyId} and currency = ${currency}`;
  return row.id;
}

/** Turns held money of a now-registered payer into the subject's identified payin. */
async function identify(tx: TransactionSql, companyId: string, subjectId: string, b: BankTransactionRow) {
  const row = await moveMoney(tx, companyId, {
    subjectId,
    kind: "payin",
    status: "identified",
    currency: b.currency,
    value: b.value,
    event: "identified",
  });
  await tx`update bank_transactions set status = 'identified', transaction_id = ${row.id}, updated_at = now()
           where company_id = ${companyId} and id = ${b.id}`;
  return row;
}

/**
 * The payer's document number as people are stored (null when its type or number is not known), or every
 * error at once. Fields left out are not judged, so a body whose shape failed can still be checked on the rest.
 */
export function checkBankTransaction(input: { payer?: Partial<BankTransactionInput["payer"]> }): string | null {
  const { document_type: type, document_number: number } = input.payer ?? {};
  if (type == null || number == null) return null;
  const doc = checkTaxId(type, number);
  if ("value" in doc) return doc.value;
  const bag = new ErrorBag();
  bag.add(["payer", "document_number"], doc.error);
  bag.throwIfAny(422);
  return null;
}

/**
 * Money arrived at the integrator's account from a payer. A registered payer's money is identified at once;
 * otherwise it waits for the payer to be registered (and the integrator is told about it).
 */
export async function receiveBankTransaction(tx: TransactionSql, companyId: string, input: BankTransactionInput) {
  const documentNumber = checkBankTransaction(input) ?? input.payer.document_number;
  const bankAccount = input.payer.bank_account ?? {};
  const [row] = await tx<BankTransactionRow[]>`
    insert into bank_transactions ${
    tx({
      id: newId(),
      company_id: companyId,
      value: input.value,
      currency: input.currency,
      movement_date: new Date().toISOString().slice(0, 10),
      bank_account_id: await dedicatedAccount(tx, companyId, input.currency),
      paid_at: new Date(),
      spei_concepto_de_pago: input.currency === "MXN" ? input.spei_concepto_de_pago ?? null : null,
      payer_document_type: input.payer.document_type,
      payer_document_number: documentNumber,
      payer_name: input.payer.name,
      payer_bank_account: tx.json({
        bank: bankAccount.bank ?? null,
        branch_number: bankAccount.branch_number ?? null,
        account_number: bankAccount.account_number ?? null,
        account_type: bankAccount.account_type ?? null,
      }),
      status: "pending",
    })
  }
    returning *`;
  const [subject] = await tx<{ id: string }[]>`
    select id from people
    where company_id = ${companyId} and document_type = ${input.payer.document_type}
      and document_number = ${documentNumber}`;
  if (subject) {
    await identify(tx, companyId, subject.id, row);
  } else {
    await emitEvent(tx, companyId, "non_identified_bank_transaction", {
      bank_transaction: presentBankTransaction(row),
    });
  }
  const [saved] = await tx<BankTransactionRow[]>`
    select * from bank_transactions where company_id = ${companyId} and id = ${row.id}`;
  return saved;
}

/** Whether money waits for the `people` row of the statement: asked inside the registration's own upsert. */
const paymentsWaiting = (sql: SqlOrTransaction) =>
  sql`exists (
    select 1 from bank_transactions b
    where b.company_id = people.company_id and b.payer_document_type = people.document_type
      and b.payer_document_number = people.document_number and b.status = 'pending'
  )`;

/**
 * POST /subject/people: registers the person and, when money waited for this payer (asked in the same statement,
 * through a partial index), turns it into their identified payins. The sweep (`identifyRegisteredPayers`) covers a
 * crash between the two steps.
 */
export async function registerPayer(sql: Sql, companyId: string, input: PersonCreateInput, quotas: StoredQuotas) {
  const { subject, created, asked } = await registerPerson(sql, companyId, input, quotas, { ask: paymentsWaiting });
  if (!asked) return { subject, created };
  await identifyWaitingPayments(sql, companyId, subject.id, subject.document_type, subject.document_number);
  // identified payins may have changed the person's status (clearance): answer it as it is now
  return { subject: await getSubjectOf(sql, "person", companyId, subject.id), created };
}

/** A payer was registered while money waited for them: it becomes the person's identified payins. */
export async function identifyWaitingPayments(
  sql: Sql,
  companyId: string,
  personId: string,
  documentType: string,
  documentNumber: string,
) {
  return await sql.begin(async (tx) => {
    const rows = await tx<BankTransactionRow[]>`
      select * from bank_transactions
      where company_id = ${companyId} and payer_document_type = ${documentType}
        and payer_document_number = ${documentNumber} and status = 'pending'
      order by id
      for update skip locked`;
    for (const b of rows) await identify(tx, companyId, personId, b);
    return rows.length;
  });
}

/**
 * The safety net for the registration path: money still waiting for a payer who is registered by now (the process
 * stopped between the registration and its identification, or the transfer arrived while the payer was being
 * registered) is identified. Run by every worker process's periodic sweep; normally it finds nothing.
 */
export async function identifyRegisteredPayers(sql: Sql): Promise<number> {
  const payers = await sql<{ company_id: string; person_id: string; document_type: string; document_number: string }[]>`
    select distinct b.company_id, p.id as person_id, p.document_type, p.document_number
    from bank_transactions b
    join people p on p.company_id = b.company_id and p.document_type = b.payer_document_type
      and p.document_number = b.payer_document_number
    where b.status = 'pending'
    limit 100`;
  for (const p of payers) {
    await identifyWaitingPayments(sql, p.company_id, p.person_id, p.document_type, p.document_number);
  }
  return payers.length;
}
