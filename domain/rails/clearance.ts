/**
 * The yearly limit (docs/clearance.md): what counts towards it, whether money for a subject may move now, and what a
 * hold does to the subject. One place for the rule, which transactions.ts applies to every transaction.
 */
import type postgres from "postgres";
import type { SqlOrTransaction, TransactionSql } from "../infra/db.ts";
import { type MandatoryDocument, missingMandatoryDocuments } from "../subjects/documents.ts";
import { holdSubject, lockSubject, type ReprovalItem, type RequiredDocument } from "../subjects/status.ts";

/** Yearly (calendar year, UTC) amount a subject may transact before the mandatory documents are needed. */
export const YEARLY_LIMIT_USD = "20000.00";

/**
 * Transaction statuses that moved money, so they count towards the yearly total. The running totals define the same
 * set in SQL (`transactions.counted`, sql/0015_running_totals.sql); tests/rails/running_totals_test.ts holds the two
 * equal.
 */
export const TRANSACTED_STATUSES = ["identified", "approved", "exchanged", "wired", "waiting_correction"] as const;

/**
 * The money a subject moved this calendar year (UTC), per currency (`currency`, `value`, `usd_value`, `count`): the
 * running totals the transaction rows keep (sql/0015_running_totals.sql, where "money that counts" is defined), a
 * handful of rows however long the history. The one definition behind the clearance limit and transaction_values.
 */
export function movedThisYear(tx: SqlOrTransaction, companyId: string, subjectId: string) {
  return tx`
    select currency, value, usd_value, count from subject_totals
    where subject_id = ${subjectId} and company_id = ${companyId}
      and year = extract(year from now() at time zone 'UTC')::int`;
}

const ITEM_OF: Record<MandatoryDocument, ReprovalItem> = {
  identity: "identity_document_missing",
  address: "proof_of_address_missing",
  tax: "revenue_tax_declaration_missing",
};
const REQUIRED_OF: Record<MandatoryDocument, RequiredDocument> = {
  identity: "identity_document",
  address: "proof_of_address",
  tax: "revenue_tax_declaration",
};

export type Clearance = { cleared: boolean; missing: MandatoryDocument[] };

/**
 * The USD amount that moves now, as an SQL expression rather than a figure: the caller computes it by the rate table in
 * the same round trip that takes the lock (`usdValueOf` in transactions.ts), or casts a value it stored before.
 */
export type UsdAmountSql = postgres.Fragment;

/**
 * Whether money for the subject may move now. Locks the subject for the rest of the transaction (one decision
 * at a time per subject, and the consequences of a hold need no second lock). A subject that is not approved
 * keeps everything held. `moving` is the amount that moves now, or null for money that does not move yet (pending,
 * failed): that is cleared while the subject is approved and does not count. Moving money is held when it takes the
 * year's total over the limit while a mandatory document is missing (`missing` says which).
 *
 * The lock and the year's total go to Postgres in one round trip, pipelined: the second statement runs after the
 * first has finished, with a snapshot of its own, so the total is read once the lock is held and sees every pay-in
 * committed before it (docs/performance.md, "What changed"). `also`: columns the caller wants read behind the lock too,
 * answered as `also` from that same statement (the pay-in's rate and endpoints: docs/performance.md, "The money path").
 */
export async function decideClearance<A extends Record<string, unknown> = Record<string, never>>(
  tx: TransactionSql,
  companyId: string,
  subjectId: string,
  moving: UsdAmountSql | null,
  also?: postgres.Fragment,
): Promise<Clearance & { also: A }> {
  const locked = lockSubject(tx, companyId, subjectId);
  const behind = moving === null
    ? (also ? tx<A[]>`select ${also}` : Promise.resolve([{} as A]))
    : yearOverLimit<A>(tx, companyId, subjectId, moving, also);
  const [person, [row]] = await Promise.all([locked, behind]);
  const { over, labels, ...extra } = row as A & { over?: boolean; labels?: string[] | null };
  const answer = (clearance: Clearance) => ({ ...clearance, also: extra as unknown as A });
  if (moving === null) return answer({ cleared: person.status === "approved", missing: [] });
  if (person.status !== "approved") return answer({ cleared: false, missing: [] });
  if (!over) return answer({ cleared: true, missing: [] });
  const missing = missingMandatoryDocuments(labels ?? []);
  return answer({ cleared: missing.length === 0, missing });
}

/**
 * Whether the year's total with `moving` added goes over the limit, and then (only then) the labels of the subject's
 * documents, so that the missing ones can be named; with the caller's `also` columns. One statement, sent behind the
 * lock in `decideClearance`.
 */
function yearOverLimit<A>(
  tx: TransactionSql,
  companyId: string,
  subjectId: string,
  moving: UsdAmountSql,
  also: postgres.Fragment | undefined,
) {
  return tx<(A & { over: boolean; labels: string[] | null })[]>`
    select t.over, case when t.over then array(
      select distinct unnest(d.labels) from documents d
      where d.company_id = ${companyId} and d.person_id = ${subjectId}
    ) end as labels ${also ? tx`, ${also}` : tx``}
    from (
      select coalesce(sum(usd_value), 0) + ${moving} > ${YEARLY_LIMIT_USD}::numeric as over
      from (${movedThisYear(tx, companyId, subjectId)}) as moved
    ) as t`;
}

/** The consequences of a held transaction: the subject is reproved and asked for what is missing. */
export async function applyClearance(tx: TransactionSql, companyId: string, subjectId: string, clearance: Clearance) {
  if (!clearance.missing.length) return;
  const requiredDocuments = clearance.missing.map((m) => REQUIRED_OF[m]);
  await holdSubject(tx, companyId, subjectId, {
    items: clearance.missing.map((m) => ITEM_OF[m]),
    reason: `Yearly transacted amount over ${YEARLY_LIMIT_USD} USD; missing documents: ${requiredDocuments.join(", ")}`,
    requiredDocuments,
  });
}
