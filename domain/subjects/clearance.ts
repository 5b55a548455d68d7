import type { TransactionSql } from "../platform/db.ts";
import { type MandatoryDocument, missingMandatoryDocuments } from "./documents.ts";
import { lockSubject, type ReprovalItem, reproveSubject, requestDocuments, type RequiredDocument } from "./status.ts";

/** Yearly (calendar year, UTC) amount a subject may transact before the mandatory documents are needed. */
export const YEARLY_LIMIT_USD = "20000.00";

/** Transaction statuses that moved money, so they count towards the yearly total. */
export const TRANSACTED_STATUSES = ["identified", "approved", "exchanged", "wired", "waiting_correction"] as const;

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
 * Whether money of `usdValue` for the subject may move now. Locks the subject (one decision at a time per
 * subject). A subject that is not approved keeps everything held; an approved one is held when this amount
 * takes the year's total over the limit while a mandatory document is missing (`missing` then says which).
 */
export async function assessClearance(
  tx: TransactionSql,
  companyId: string,
  subjectId: string,
  usdValue: string,
): Promise<Clearance> {
  const person = await lockSubject(tx, companyId, subjectId);
  if (person.status !== "approved") return { cleared: false, missing: [] };
  const [{ over }] = await tx<{ over: boolean }[]>`
    select coalesce(sum(usd_value), 0) + ${usdValue}::numeric > ${YEARLY_LIMIT_USD}::numeric as over
    from transactions
    where company_id = ${companyId} and subject_id = ${subjectId}
      and status in ${tx(TRANSACTED_STATUSES)}
      and inserted_at >= date_trunc('year', now() at time zone 'UTC') at time zone 'UTC'`;
  if (!over) return { cleared: true, missing: [] };
  const labels = await tx<{ label: string }[]>`
    select distinct unnest(labels) as label from documents
    where company_id = ${companyId} and person_id = ${subjectId}`;
  const missing = missingMandatoryDocuments(labels.map((l) => l.label));
  return { cleared: missing.length === 0, missing };
}

/** The consequences of a held transaction: the subject is reproved and asked for what is missing. */
export async function applyClearance(tx: TransactionSql, companyId: string, subjectId: string, clearance: Clearance) {
  if (!clearance.missing.length) return;
  const required = clearance.missing.map((m) => REQUIRED_OF[m]);
  await reproveSubject(tx, companyId, subjectId, {
    items: clearance.missing.map((m) => ITEM_OF[m]),
    reason: `Yearly transacted amount over ${YEARLY_LIMIT_USD} USD; missing documents: ${required.join(", ")}`,
  });
  await requestDocuments(tx, companyId, subjectId, required);
}
