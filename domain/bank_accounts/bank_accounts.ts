/**
 * Bank accounts stored: create, read, update, and the object every answer shows. What an account must hold is
 * rules.ts's, so registration, update and the wire correction (rails/wires.ts) check the same rules.
 */
import type { Sql, SqlOrTransaction } from "../infra/db.ts";
import { ErrorBag, notFound } from "../basics/errors.ts";
import { newId } from "../basics/ids.ts";
import { naiveUtc } from "../basics/time.ts";
import { directoryIspb, resolveBank } from "./directory.ts";
import { assertPerson } from "../subjects/people.ts";
import { claimRoom, type StoredQuotas, withinQuotas } from "../subjects/quotas.ts";
import { type BankAccountScope, type NormalizedBankAccount, validateBankAccountInput } from "./rules.ts";
import type { BankAccountInput } from "./rules.ts";

export { type BankAccountScope, countryOfCurrency, validateBankAccountInput } from "./rules.ts";

/** A bank account with its bank and owning company, as every read returns it. */
export type BankAccountRow = Omit<NormalizedBankAccount, "bank"> & {
  id: string;
  company_id: string;
  subject_id: string | null;
  bank_id: string | null;
  intermediary_bank_account_id: string | null;
  inserted_at: Date;
  updated_at: Date;
  bank_code: string | null;
  bank_ispb: string | null;
  bank_swift: string | null;
  bank_name: string | null;
  bank_country: string | null;
  internal: boolean;
  company_social_name: string | null;
  company_document_type: string | null;
  company_document_number: string | null;
};

/**
 * The bank-account object of every answer. The create response names the intermediary account
 * `intermediary_bank_account`; list, update and detail name it `intermediary_bank_account_id`, as existing clients
 * read it (docs/api.md, "Documents and bank accounts").
 */
export function presentBankAccount(row: BankAccountRow, opts: { onCreate?: boolean } = {}) {
  const intermediary = opts.onCreate
    ? { intermediary_bank_account: null }
    : { intermediary_bank_account_id: row.intermediary_bank_account_id };
  return {
    id: row.id,
    currency: row.currency,
    account_type: row.account_type,
    account_number: row.account_number,
    branch_number: row.branch_number,
    branch_country: row.branch_country,
    routing_number: row.routing_number,
    iban: row.iban,
    aba: row.aba,
    nickname: row.nickname,
    owner_name: row.owner_name,
    owner_document_number: row.owner_document_number,
    owner_document_type: row.owner_document_type,
    owner_company: {
      social_name: row.company_social_name,
      id: row.company_id,
      document_type: row.company_document_type,
      document_number: row.company_document_number,
    },
    ...intermediary,
    pix_info: row.pix_type && row.pix_key ? { type: row.pix_type, key: row.pix_key } : null,
    // a PIX-only account has no bank: the object keeps its shape, with the country its currency implies
    bank: {
      swift: row.bank_swift,
      ispb: row.bank_ispb,
      name: row.bank_name,
      id: row.bank_id,
      code: row.bank_code,
      country: row.bank_country ?? (row.country === "INT" ? null : row.country),
    },
    inserted_at: naiveUtc(row.inserted_at),
    updated_at: naiveUtc(row.updated_at),
  };
}

/** One of the company's own accounts: the bank-account object, and whether it is an internal account. */
export function presentOwnBankAccount(row: BankAccountRow) {
  return { ...presentBankAccount(row), internal: row.internal };
}

export type BankAccountView = ReturnType<typeof presentBankAccount>;

function selectAccounts(sql: SqlOrTransaction) {
  return sql`
    select a.*, b.code as bank_code, b.ispb as bank_ispb, b.swift as bank_swift, b.name as bank_name,
           b.country as bank_country, c.social_name as company_social_name,
           c.document_type as company_document_type, c.document_number as company_document_number
    from bank_accounts a
    join companies c on c.id = a.company_id
    left join banks b on b.id = a.bank_id`;
}

/** Any account of the company, a subject's or an international one (the payment rails look them up by id). */
export async function getBankAccount(sql: SqlOrTransaction, companyId: string, id: string): Promise<BankAccountRow> {
  const [row] = await sql<BankAccountRow[]>`
    ${selectAccounts(sql)} where a.company_id = ${companyId} and a.id = ${id}`;
  if (!row) throw notFound();
  return row;
}

/** An account of one subject: another subject's account answers 404, like an unknown id. */
export async function getSubjectBankAccount(sql: SqlOrTransaction, companyId: string, subjectId: string, id: string) {
  const [row] = await sql<BankAccountRow[]>`
    ${selectAccounts(sql)} where a.company_id = ${companyId} and a.subject_id = ${subjectId} and a.id = ${id}`;
  if (!row) throw notFound();
  return row;
}

/** The company's own accounts (internal ones first, by currency, then the international ones it registered). */
export async function listOwnBankAccounts(sql: Sql, companyId: string) {
  return await sql<BankAccountRow[]>`
    ${selectAccounts(sql)} where a.company_id = ${companyId} and a.subject_id is null
    order by a.internal desc, a.id`;
}

/** One of the company's own accounts: a subject's account answers 404 here. */
export async function getOwnBankAccount(sql: SqlOrTransaction, companyId: string, id: string): Promise<BankAccountRow> {
  const [row] = await sql<BankAccountRow[]>`
    ${selectAccounts(sql)} where a.company_id = ${companyId} and a.subject_id is null and a.id = ${id}`;
  if (!row) throw notFound();
  return row;
}

export async function listSubjectBankAccounts(sql: Sql, companyId: string, subjectId: string) {
  await assertPerson(sql, companyId, subjectId);
  return await sql<BankAccountRow[]>`
    ${selectAccounts(sql)} where a.company_id = ${companyId} and a.subject_id = ${subjectId} order by a.id`;
}

/** Columns written from a checked account, with the bank resolved against the directory. */
async function columns(tx: SqlOrTransaction, companyId: string, account: NormalizedBankAccount) {
  const { bank, ...fields } = account;
  const bankId = bank ? (await resolveBank(tx, companyId, bank)).id : null;
  return { ...fields, bank_id: bankId };
}

/**
 * Stores a checked account (from `validateBankAccountInput`) for a subject, or for the company when `subjectId`
 * is null. Takes the caller's transaction so a wire correction can store it with its own state change; the caller
 * takes its room in the bank accounts quota (`claimRoom`) before committing.
 */
export async function insertBankAccount(
  tx: SqlOrTransaction,
  companyId: string,
  subjectId: string | null,
  account: NormalizedBankAccount,
): Promise<string> {
  const id = newId();
  const row = { id, company_id: companyId, subject_id: subjectId, ...(await columns(tx, companyId, account)) };
  await tx`insert into bank_accounts ${tx(row)}`;
  return id;
}

/**
 * POST /subject/:id/bank_accounts (subjectId) and POST /bank_accounts (null: international, company level). Both
 * take room in the company's bank accounts quota (`subjects/quotas.ts`), last in the transaction.
 */
export async function createBankAccount(
  sql: Sql,
  companyId: string,
  subjectId: string | null,
  input: BankAccountInput,
  quotas: StoredQuotas,
): Promise<BankAccountRow> {
  if (subjectId) await assertPerson(sql, companyId, subjectId);
  const account = validateBankAccountInput(input, { scope: subjectId ? "subject" : "international" });
  return await withinQuotas(quotas, () =>
    sql.begin(async (tx) => {
      const id = await insertBankAccount(tx, companyId, subjectId, account);
      const row = await getBankAccount(tx, companyId, id);
      await claimRoom(tx, companyId, quotas, { bankAccounts: 1 });
      return row;
    }));
}

/** The stored account in the shape of a request body, so an update can be checked as the whole account it makes. */
function asInput(row: BankAccountRow): BankAccountInput {
  return {
    currency: row.currency,
    owner_name: row.owner_name,
    owner_document_number: row.owner_document_number,
    owner_document_type: row.owner_document_type,
    account_number: row.account_number,
    branch_number: row.branch_number,
    branch_country: row.branch_country,
    account_type: row.account_type,
    routing_number: row.routing_number,
    iban: row.iban,
    aba: row.aba,
    nickname: row.nickname,
    bank: row.bank_id ? { code: row.bank_code, ispb: row.bank_ispb, name: row.bank_name, swift: row.bank_swift } : null,
    pix_info: row.pix_type ? { type: row.pix_type, key: row.pix_key } : null,
  };
}

/** Given fields replace stored ones (inside `bank` and `pix_info` too), omitted ones stay, null clears. */
function mergePatch(current: BankAccountInput, patch: BankAccountInput): BankAccountInput {
  const merged: Record<string, unknown> = { ...current };
  for (const [key, v] of Object.entries(patch)) {
    if (v === undefined) continue;
    const before = merged[key];
    merged[key] = v !== null && typeof v === "object" && before && typeof before === "object"
      ? { ...before, ...Object.fromEntries(Object.entries(v).filter(([, x]) => x !== undefined)) }
      : v;
  }
  return merged as BankAccountInput;
}

/**
 * The account an update would leave, checked with the rules of its (possibly new) currency, so an update never
 * leaves an account that registration would refuse; throws every error at once. Writes nothing.
 */
export async function checkBankAccountPatch(
  tx: SqlOrTransaction,
  companyId: string,
  current: BankAccountRow,
  patch: BankAccountInput,
): Promise<NormalizedBankAccount> {
  const scope: BankAccountScope = current.subject_id ? "subject" : "international";
  const merged = mergePatch(asInput(current), patch);
  // clients send updates and wire corrections with bank {code, name} only: a Brazilian code given
  // without its ISPB takes the directory's (a PIX-only account has none to keep)
  let codeWithoutIspb = false;
  if (merged.currency?.toUpperCase() === "BRL" && patch.bank?.code && !patch.bank.ispb && merged.bank) {
    const ispb = await directoryIspb(tx, companyId, String(patch.bank.code).trim());
    if (ispb) merged.bank = { ...merged.bank, ispb };
    else codeWithoutIspb = true;
  }
  if (!codeWithoutIspb) return validateBankAccountInput(merged, { scope });
  // No ISPB could be found for the code, so the update is refused: what is wrong is the code the request sent (its
  // format, or a bank the directory does not know), never an ISPB it did not send (every field of an update is
  // optional; docs/errors.md, "Updates name only what they send"). The other fields' errors come with it.
  const bag = new ErrorBag();
  await bag.collect(() => validateBankAccountInput(merged, { scope }), (path) => path.join(".") === "bank.ispb");
  const bankErrors = bag.errors.bank;
  if (!bankErrors || Array.isArray(bankErrors) || !bankErrors.code) bag.add(["bank", "code"], UNKNOWN_BANK_CODE);
  bag.throwIfAny();
  throw new Error("unreachable: the bag holds the error on bank.code");
}

/** A well-formed Brazilian code the directory does not know, sent in an update without its ISPB. */
export const UNKNOWN_BANK_CODE = "is not a known bank code; send bank.ispb with it";

/**
 * Updates an account within the caller's transaction (see `checkBankAccountPatch`).
 * `subjectId` restricts the lookup to one subject's accounts; undefined means any account of the company.
 */
export async function patchBankAccount(
  tx: SqlOrTransaction,
  companyId: string,
  id: string,
  patch: BankAccountInput,
  opts: { subjectId?: string } = {},
): Promise<BankAccountRow> {
  const current = await lockBankAccount(tx, companyId, id, opts);
  const account = await checkBankAccountPatch(tx, companyId, current, patch);
  const fields = await columns(tx, companyId, account);
  await tx`update bank_accounts set ${tx(fields)}, updated_at = now() where company_id = ${companyId} and id = ${id}`;
  return await getBankAccount(tx, companyId, id);
}

async function lockBankAccount(tx: SqlOrTransaction, companyId: string, id: string, opts: { subjectId?: string }) {
  const [locked] = await tx<{ subject_id: string | null }[]>`
    select subject_id from bank_accounts
    where company_id = ${companyId} and id = ${id}
      ${opts.subjectId ? tx`and subject_id = ${opts.subjectId}` : tx``}
    for update`;
  if (!locked) throw notFound();
  return await getBankAccount(tx, companyId, id);
}

/** PUT /subject/:id/bank_accounts/:bank_account_id. */
export async function updateSubjectBankAccount(
  sql: Sql,
  companyId: string,
  subjectId: string,
  id: string,
  patch: BankAccountInput,
): Promise<BankAccountRow> {
  return await sql.begin((tx) => patchBankAccount(tx, companyId, id, patch, { subjectId }));
}

/** The rules PUT /subject/:id/bank_accounts/:bank_account_id applies, without writing (an unknown account is 404). */
export async function checkSubjectBankAccountPatch(
  sql: Sql,
  companyId: string,
  subjectId: string,
  id: string,
  patch: BankAccountInput,
) {
  const current = await getSubjectBankAccount(sql, companyId, subjectId, id);
  await checkBankAccountPatch(sql, companyId, current, patch);
}
