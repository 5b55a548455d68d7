/**
 * The transactions API (docs/api.md, "Transactions"): pay-ins into the company's own accounts and pay-outs to a
 * subject's account, created through the one money path (`moveMoney`), so the sandbox and the API make the same
 * rows and events and clearance applies to both.
 */
import type { Sql, SqlOrTransaction, TransactionSql } from "../infra/db.ts";
import { ErrorBag, notFound, unprocessable } from "../basics/errors.ts";
import { newId } from "../basics/ids.ts";
import { naiveUtc } from "../basics/time.ts";
import { type BankAccountRow, getBankAccount, presentOwnBankAccount } from "../bank_accounts/bank_accounts.ts";
import { getSubject, presentSubject } from "../subjects/subjects.ts";
import { TRANSACTED_STATUSES } from "./clearance.ts";
import { emitEvent } from "../webhooks/outbox/events.ts";
import { expirePixCharge, issuePixCode, payPixCharge } from "./pix_charges.ts";
import { changeTransactionStatus, moveMoney, type TransactionRow } from "./transactions.ts";
import { bankRefusal } from "./sandbox_outcomes.ts";

export type TransactionInput = {
  subject_id: string;
  from_bank_account_id?: string | null;
  to_bank_account_id: string;
  currency: string;
  exchange_currency: string;
  value: string;
  use_dynamic_pix?: boolean | null;
  dynamic_pix_expires_at?: Date | null;
  refuse_third_party?: boolean | null;
};

/** A dynamic PIX code lives an hour unless told otherwise. */
const PIX_LIFETIME_MS = 60 * 60 * 1000;

export const API_STATUSES = ["pending", "identified", "exchanged", "wired", "canceled"] as const;
export type ApiStatus = typeof API_STATUSES[number];

/** The status Facilitapay's clients know, for each status the rails record. */
const API_STATUS: Record<TransactionRow["status"], ApiStatus> = {
  pending: "pending",
  identified: "identified",
  approved: "identified",
  waiting_correction: "identified",
  exchanged: "exchanged",
  wired: "wired",
  failed: "canceled",
  refunded: "canceled",
  expired: "canceled",
  canceled: "canceled",
};

const CANCELED_REASON: Partial<Record<TransactionRow["status"], string>> = {
  failed: "payment failed",
  refunded: "paid by a third party while third parties are refused: refunded to the payer",
  expired: "expired before it was paid",
  canceled: "voided",
};

type Loaded = { row: TransactionRow; pixCode: string | null };

/**
 * A bank account as a transaction shows it: without a bank or an owning company when it has none (an internal
 * account, a PIX key), since clients require a bank's id and a company's document type whenever the object is there.
 */
function accountInTransaction(account: BankAccountRow) {
  const shown = presentOwnBankAccount(account);
  return {
    ...shown,
    bank: shown.bank.id ? shown.bank : null,
    owner_company: shown.owner_company.document_type ? shown.owner_company : null,
  };
}

/** The `<transaction>` object of the transactions API. */
export async function presentPayment(sql: SqlOrTransaction, companyId: string, { row, pixCode }: Loaded) {
  const subject = await getSubject(sql, companyId, row.subject_id);
  const account = (id: string | null) => id ? getBankAccount(sql, companyId, id).then(accountInTransaction) : null;
  // clients require a destination: a refund to a payer whose account is unknown (paid by PIX) shows the account
  // the money leaves from
  const toId = row.to_bank_account_id ?? row.bank_account_id ?? row.from_bank_account_id;
  const [to, from] = await Promise.all([account(toId), account(row.from_bank_account_id)]);
  const canceled = API_STATUS[row.status] === "canceled";
  return {
    id: row.id,
    value: row.value,
    status: API_STATUS[row.status],
    transaction_kind: row.kind,
    // the sandbox's and the subject list's name for it, answered too (docs/sandbox.md, "`kind` and `transaction_kind`")
    kind: row.kind,
    currency: row.currency,
    exchange_currency: row.exchange_currency ?? row.currency,
    exchanged_value: row.exchanged_value,
    subject_id: row.subject_id,
    subject: presentSubject(subject),
    subject_is_receiver: row.kind === "payout",
    to_bank_account: to,
    from_bank_account: from,
    source_name: subject.social_name,
    source_document_type: subject.document_type,
    source_document_number: subject.document_number,
    cleared: row.cleared,
    for_exchange: row.wants_exchange,
    dynamic_pix_code: pixCode,
    dynamic_pix_expires_at: row.dynamic_pix_expires_at ? naiveUtc(row.dynamic_pix_expires_at) : null,
    exchange_id: row.exchange_id,
    wire_id: row.wire_id,
    refund_of: row.refund_of,
    canceled_reason: canceled ? CANCELED_REASON[row.status] ?? null : null,
    canceled_at: canceled ? naiveUtc(row.updated_at) : null,
    inserted_at: naiveUtc(row.inserted_at),
  };
}

/** A transaction of the company with its PIX code, or 404. */
export async function loadPayment(sql: SqlOrTransaction, companyId: string, id: string): Promise<Loaded> {
  const [row] = await sql<(TransactionRow & { pix_code: string | null })[]>`
    select t.*, c.qr_code as pix_code
    from transactions t left join pix_charges c on c.id = t.id
    where t.company_id = ${companyId} and t.id = ${id}`;
  if (!row) throw notFound();
  const { pix_code, ...rest } = row;
  return { row: rest as TransactionRow, pixCode: pix_code };
}

/** The company's transactions, newest first, `perPage` after the cursor, optionally of one subject, status or kind. */
export async function listPayments(
  sql: Sql,
  companyId: string,
  q: { subject_id?: string; status?: string; kind?: string; last_id?: string; per_page: number },
): Promise<Loaded[]> {
  const statuses = q.status
    ? Object.keys(API_STATUS).filter((s) => API_STATUS[s as keyof typeof API_STATUS] === q.status)
    : null;
  const rows = await sql<(TransactionRow & { pix_code: string | null })[]>`
    select t.*, c.qr_code as pix_code
    from transactions t left join pix_charges c on c.id = t.id
    where t.company_id = ${companyId}
      ${q.subject_id ? sql`and t.subject_id = ${q.subject_id}` : sql``}
      ${statuses ? sql`and t.status in ${sql(statuses)}` : sql``}
      ${q.kind ? sql`and t.kind = ${q.kind}` : sql``}
      ${q.last_id ? sql`and t.id < ${q.last_id}` : sql``}
    order by t.id desc
    limit ${q.per_page}`;
  return rows.map(({ pix_code, ...row }) => ({ row: row as TransactionRow, pixCode: pix_code }));
}

/** An account of the company named in a body: a field error (not a 404) when it is not the company's. */
async function accountOf(tx: SqlOrTransaction, companyId: string, id: string, bag: ErrorBag, field: string) {
  const [row] = await tx<
    { id: string; subject_id: string | null; internal: boolean; currency: string; account_number: string | null }[]
  >`
    select id, subject_id, internal, currency, account_number from bank_accounts
    where company_id = ${companyId} and id = ${id}`;
  if (!row) bag.add(field, "does not exist");
  return row ?? null;
}

/**
 * Creates a pay-in (to one of the company's internal accounts, pending until paid) or a pay-out (to an account of
 * the subject: identified at once, exchanged when converting, wired), with clearance decided as for any money.
 * With `sandbox`, a pay-out to an account number the sandbox's bank refuses waits for correction instead of leaving
 * (docs/sandbox.md, "Magic values").
 */
export async function createPayment(
  tx: TransactionSql,
  companyId: string,
  input: TransactionInput,
  opts: { sandbox: boolean } = { sandbox: false },
): Promise<Loaded> {
  const bag = new ErrorBag();
  const [subject] = await tx`select 1 from people where company_id = ${companyId} and id = ${input.subject_id}`;
  if (!subject) bag.add("subject_id", "does not exist");
  const to = await accountOf(tx, companyId, input.to_bank_account_id, bag, "to_bank_account_id");
  const from = input.from_bank_account_id
    ? await accountOf(tx, companyId, input.from_bank_account_id, bag, "from_bank_account_id")
    : null;
  const payin = to?.internal === true;
  if (to && !payin && to.subject_id !== input.subject_id) {
    bag.add("to_bank_account_id", "is neither one of your internal accounts nor an account of the subject");
  }
  if (to && payin && to.currency !== input.exchange_currency) {
    bag.add("to_bank_account_id", "must be your internal account in exchange_currency");
  }
  if (to && !payin && to.currency !== input.exchange_currency) {
    bag.add("to_bank_account_id", "must be an account in exchange_currency");
  }
  if (from && payin && from.subject_id === null) bag.add("from_bank_account_id", "must be an account of the payer");
  if (from && !payin && !(from.internal && from.currency === input.currency)) {
    bag.add("from_bank_account_id", "must be your internal account in currency");
  }
  if (input.use_dynamic_pix && !(payin && input.currency === "BRL")) {
    bag.add("use_dynamic_pix", "is only for pay-ins in BRL");
  }
  const expiresAt = input.use_dynamic_pix
    ? input.dynamic_pix_expires_at ?? new Date(Date.now() + PIX_LIFETIME_MS)
    : null;
  if (expiresAt && expiresAt.getTime() <= Date.now()) bag.add("dynamic_pix_expires_at", "must be in the future");
  bag.throwIfAny(422);

  const id = newId();
  const common = {
    id,
    subjectId: input.subject_id,
    currency: input.currency,
    value: input.value,
    exchangeCurrency: input.exchange_currency,
    wantsExchange: input.currency !== input.exchange_currency,
    toBankAccountId: to!.id,
  };
  if (payin) {
    await moveMoney(tx, companyId, {
      ...common,
      kind: "payin",
      status: "pending",
      event: null,
      fromBankAccountId: from?.id ?? null,
      dynamicPixExpiresAt: expiresAt,
    });
    if (input.use_dynamic_pix) {
      await issuePixCode(tx, companyId, {
        id,
        subject_id: input.subject_id,
        value: input.value,
        refuse_third_party: input.refuse_third_party,
      });
    }
  } else {
    const [funding] = from ? [from] : await tx<{ id: string }[]>`
      select id from bank_accounts where company_id = ${companyId} and internal and currency = ${input.currency}`;
    await moveMoney(tx, companyId, {
      ...common,
      kind: "payout",
      status: "identified",
      event: "identified",
      bankAccountId: to!.id,
      fromBankAccountId: funding.id,
      wireError: opts.sandbox ? bankRefusal(to!.account_number) : null,
    });
  }
  return await loadPayment(tx, companyId, id);
}

async function lockPayment(tx: TransactionSql, companyId: string, id: string): Promise<Loaded> {
  const [locked] = await tx`select 1 from transactions where company_id = ${companyId} and id = ${id} for update`;
  if (!locked) throw notFound();
  return await loadPayment(tx, companyId, id);
}

/** Void: a pending transaction is canceled; anything else is refused (422). */
export async function voidPayment(tx: TransactionSql, companyId: string, id: string) {
  const { row } = await lockPayment(tx, companyId, id);
  if (row.status !== "pending") {
    throw unprocessable(`only a pending transaction can be voided; this one is ${API_STATUS[row.status]}`);
  }
  await tx`update pix_charges set status = 'canceled', updated_at = now() where company_id = ${companyId} and id = ${id}`;
  const [canceled] = await tx<TransactionRow[]>`
    update transactions set status = 'canceled', updated_at = now()
    where company_id = ${companyId} and id = ${id}
    returning *`;
  return canceled;
}

/** The answer of a void: the cancellation, and the transaction it canceled as the bank saw it. */
export async function presentVoid(sql: SqlOrTransaction, companyId: string, row: TransactionRow) {
  const subject = await getSubject(sql, companyId, row.subject_id);
  return {
    id: row.id,
    reason: CANCELED_REASON.canceled!,
    inserted_at: naiveUtc(row.updated_at),
    status: "canceled" as const,
    transaction_kind: row.kind,
    // the sandbox's and the subject list's name for it, answered too (docs/sandbox.md, "`kind` and `transaction_kind`")
    kind: row.kind,
    bank_transaction: {
      id: row.id,
      value: row.value,
      currency: row.currency,
      iof_value: null,
      fx_value: null,
      exchange_rate: null,
      exchange_currency: row.exchange_currency ?? row.currency,
      exchanged_value: row.exchanged_value ?? row.value,
      exchange_approved: false,
      wire_id: row.wire_id,
      exchange_id: row.exchange_id,
      movement_date: naiveUtc(row.inserted_at).slice(0, 10),
      source_name: subject.social_name,
      source_document_number: subject.document_number,
      source_document_type: subject.document_type,
      source_id: subject.id,
      source_type: "subject",
      source_description: `${row.kind} of ${subject.social_name}`,
      source_bank: null,
      source_branch: null,
      source_account: null,
      source_bank_ispb: null,
      company_id: companyId,
      company_name: "",
    },
  };
}

/**
 * Refund of a received pay-in, in full and once: a transaction of its own (kind `refund`) that pays the value back
 * from the internal account that collected it, and `payment_refunded` for the pay-in.
 */
export async function refundPayment(tx: TransactionSql, companyId: string, id: string): Promise<Loaded> {
  const { row } = await lockPayment(tx, companyId, id);
  const received = row.kind === "payin" && (TRANSACTED_STATUSES as readonly string[]).includes(row.status);
  if (!received) throw unprocessable("only a received pay-in can be refunded");
  const [already] = await tx`select 1 from transactions where company_id = ${companyId} and refund_of = ${id}`;
  if (already) throw unprocessable("this pay-in was refunded already");
  const refundId = newId();
  await moveMoney(tx, companyId, {
    id: refundId,
    subjectId: row.subject_id,
    kind: "refund",
    status: "wired",
    currency: row.currency,
    value: row.value,
    event: null,
    exchangeCurrency: row.exchange_currency,
    fromBankAccountId: row.to_bank_account_id,
    toBankAccountId: row.from_bank_account_id,
    refundOf: row.id,
  });
  await emitEvent(tx, companyId, "payment_refunded", { transaction_id: row.id });
  return await loadPayment(tx, companyId, refundId);
}

/** A refund of the pay-in `id`, by its own id (404 for any other). */
export async function loadRefund(
  sql: SqlOrTransaction,
  companyId: string,
  id: string,
  refundId: string,
): Promise<Loaded> {
  const loaded = await loadPayment(sql, companyId, refundId);
  if (loaded.row.refund_of !== id) throw notFound();
  return loaded;
}

/** Sandbox: the payer pays a pending pay-in (its dynamic PIX code, or the bank transfer it waits for). */
export async function payPayment(
  tx: TransactionSql,
  companyId: string,
  id: string,
  input: { payer_document_number?: string | null },
): Promise<Loaded> {
  const { row, pixCode } = await lockPayment(tx, companyId, id);
  if (row.status !== "pending") {
    throw unprocessable(`only a pending transaction can be paid; this one is ${API_STATUS[row.status]}`);
  }
  if (pixCode) await payPixCharge(tx, companyId, id, input);
  else await changeTransactionStatus(tx, companyId, id, "identified", "identified");
  return await loadPayment(tx, companyId, id);
}

/** Sandbox: a pending pay-in was not paid in time (`payment_expired`). */
export async function expirePayment(tx: TransactionSql, companyId: string, id: string): Promise<Loaded> {
  const { row, pixCode } = await lockPayment(tx, companyId, id);
  if (row.status !== "pending") {
    throw unprocessable(`only a pending transaction can expire; this one is ${API_STATUS[row.status]}`);
  }
  if (pixCode) await expirePixCharge(tx, companyId, id);
  else await changeTransactionStatus(tx, companyId, id, "expired", "payment_expired");
  return await loadPayment(tx, companyId, id);
}

/** What credited and debited one of the company's own accounts, in its currency; the balance is their difference. */
export async function accountBalance(sql: SqlOrTransaction, companyId: string, accountId: string) {
  const [row] = await sql<
    {
      currency: string;
      credit_value: string;
      credit_transactions: number;
      debit_value: string;
      debit_transactions: number;
      balance: string;
    }[]
  >`
    with account as (
      select id, currency from bank_accounts where company_id = ${companyId} and id = ${accountId} and subject_id is null
    ), moved as (
      select t.to_bank_account_id is not distinct from a.id as credit,
             case when t.currency = a.currency then t.value else coalesce(t.exchanged_value, t.value) end as amount
      from account a
      join transactions t on t.company_id = ${companyId} and (t.to_bank_account_id = a.id or t.from_bank_account_id = a.id)
      where t.status in ${sql(TRANSACTED_STATUSES)}
    )
    select a.currency,
           coalesce(sum(amount) filter (where credit), 0)::numeric(30, 2) as credit_value,
           (count(*) filter (where credit))::int as credit_transactions,
           coalesce(sum(amount) filter (where not credit), 0)::numeric(30, 2) as debit_value,
           (count(*) filter (where not credit))::int as debit_transactions
    from account a left join moved on true
    group by a.currency`;
  if (!row) throw notFound();
  const [balance] = await sql<
    { v: string }[]
  >`select (${row.credit_value}::numeric - ${row.debit_value}::numeric)::numeric(30, 2) as v`;
  return { ...row, balance: balance.v };
}
