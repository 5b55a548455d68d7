/**
 * A subject's status: every change (the back office's, or a hold at the yearly limit) goes through here, is written to
 * the status log and emits the subject's event.
 */
import type { TransactionSql } from "../infra/db.ts";
import { notFound } from "../basics/errors.ts";
import { newId } from "../basics/ids.ts";
import { emitEvent } from "../webhooks/outbox/events.ts";

/** Values of subject_reproved.items: the back office's reasons, plus the missing identity and tax documents. */
export const REPROVAL_ITEMS = [
  "proof_of_address_missing",
  "proof_of_address_rejected",
  "old_tax_declaration",
  "tax_declaration_insufficient",
  "identity_document_missing",
  "revenue_tax_declaration_missing",
] as const;
export type ReprovalItem = typeof REPROVAL_ITEMS[number];

/** Values of document_required.required_documents. */
export const REQUIRED_DOCUMENTS = ["proof_of_address", "revenue_tax_declaration", "identity_document"] as const;
export type RequiredDocument = typeof REQUIRED_DOCUMENTS[number];

/**
 * Locks the person for the rest of the transaction: status changes and the yearly total of one subject
 * are decided one at a time. Another company's id is not found.
 */
export async function lockSubject(tx: TransactionSql, companyId: string, subjectId: string) {
  const [person] = await tx<{ id: string; status: "approved" | "reproved" | "waiting_approval" }[]>`
    select id, status from people where company_id = ${companyId} and id = ${subjectId} for update`;
  if (!person) throw notFound();
  return person;
}

/** Every change of a person's status goes through here, so the status log holds the whole history. */
export async function setStatus(
  tx: TransactionSql,
  companyId: string,
  subjectId: string,
  change: { status: string; reason: string; items?: readonly string[] },
) {
  await tx`update people set status = ${change.status}, status_reason = ${change.reason}, updated_at = now()
           where company_id = ${companyId} and id = ${subjectId}`;
  await tx`insert into person_status_log (id, company_id, person_id, status, items, reason)
           values (${newId()}, ${companyId}, ${subjectId}, ${change.status}, ${change.items ?? []}, ${change.reason})`;
}

/** Back office approves the registration. The rails release the money held meanwhile (`approveAndRelease`). */
export async function approveSubject(tx: TransactionSql, companyId: string, subjectId: string) {
  await lockSubject(tx, companyId, subjectId);
  await setStatus(tx, companyId, subjectId, { status: "approved", reason: "" });
  await emitEvent(tx, companyId, "subject_approved", { subject_id: subjectId });
}

/**
 * Back office reproves a subject (documents rejected); the yearly limit reached without them is `holdSubject`.
 * `reason` is the status_reason; the event carries it only when one was given.
 */
export async function reproveSubject(
  tx: TransactionSql,
  companyId: string,
  subjectId: string,
  input: { items: readonly string[]; reason?: string | null },
) {
  await lockSubject(tx, companyId, subjectId);
  await markReproved(tx, companyId, subjectId, input);
}

/** Asks for more documents without changing the approval status. */
export async function requestDocuments(
  tx: TransactionSql,
  companyId: string,
  subjectId: string,
  requiredDocuments: readonly string[],
) {
  await lockSubject(tx, companyId, subjectId);
  await askForDocuments(tx, companyId, subjectId, requiredDocuments);
}

/**
 * Money was held because the yearly limit was reached without the mandatory documents: the subject is reproved
 * and asked for what is missing. The caller (clearance) already holds the subject's lock from its decision.
 */
export async function holdSubject(
  tx: TransactionSql,
  companyId: string,
  subjectId: string,
  hold: { items: readonly ReprovalItem[]; reason: string; requiredDocuments: readonly RequiredDocument[] },
) {
  await markReproved(tx, companyId, subjectId, hold);
  await askForDocuments(tx, companyId, subjectId, hold.requiredDocuments);
}

async function markReproved(
  tx: TransactionSql,
  companyId: string,
  subjectId: string,
  input: { items: readonly string[]; reason?: string | null },
) {
  const reason = input.reason || `reproved: ${input.items.join(", ")}`;
  await setStatus(tx, companyId, subjectId, { status: "reproved", reason, items: input.items });
  await emitEvent(tx, companyId, "subject_reproved", {
    subject_id: subjectId,
    items: [...input.items],
    ...(input.reason ? { reason: input.reason } : {}),
  });
}

async function askForDocuments(
  tx: TransactionSql,
  companyId: string,
  subjectId: string,
  requiredDocuments: readonly string[],
) {
  await emitEvent(tx, companyId, "document_required", {
    subject_id: subjectId,
    required_documents: [...requiredDocuments],
  });
}
