/**
 * People: subjects of kind `person` (`subjects.ts` holds what they share with company customers). Theirs alone: the
 * documents that may come with a registration, the rules across fields (`person_rules.ts`), and the review a
 * reproved person goes back to when their documents are complete.
 */
import type postgres from "postgres";
import type { Sql, SqlOrTransaction, TransactionSql } from "../infra/db.ts";
import { ErrorBag, notFound } from "../basics/errors.ts";
import {
  type DocumentInput,
  insertDocument,
  missingMandatoryDocuments,
  type PreparedDocument,
  prepareDocument,
} from "./documents.ts";
import { checkPerson } from "./person_rules.ts";
import { claimRoom, documentsUsage, refuseEarly, type StoredQuotas, withinQuotas } from "./quotas.ts";
import { setStatus } from "./status.ts";
import { getSubjectOf, type PatchCheck, saveSubject, type SubjectCreateInput, subjectUpdates } from "./subjects.ts";

/** A registration as a client sends it: a subject's, and the documents that may come with it. */
export type PersonCreateInput = SubjectCreateInput<"person"> & { documents?: DocumentInput[] | null };

/** 404 unless the subject exists and is the company's: every subject route starts here. */
export async function assertPerson(sql: SqlOrTransaction, companyId: string, id: string): Promise<void> {
  const [found] = await sql`select 1 from people where company_id = ${companyId} and id = ${id}`;
  if (!found) throw notFound();
}

/**
 * Everything a registration must satisfy besides its shape: the rules across fields and the content of each
 * document, all reported at once (a bad CPF and a bad file in one answer). Fields left out are not judged, so a
 * body whose shape failed can still be checked on the rest. Answers the normalised document number and the
 * documents ready to store.
 */
export async function checkRegistration(input: Partial<PersonCreateInput>) {
  const bag = new ErrorBag();
  const absent = (["document_type", "document_number", "fiscal_country"] as const).filter((k) => input[k] == null);
  const documentNumber = checkPerson(
    {
      ...input,
      document_type: input.document_type ?? "cpf",
      document_number: input.document_number ?? "",
      fiscal_country: input.fiscal_country ?? "",
    },
    bag,
    new Set(absent),
  );
  const documents: PreparedDocument[] = [];
  for (const [i, doc] of (input.documents ?? []).entries()) {
    if (!doc) continue; // refused for its shape: already reported
    const prepared = await bag.collect(() => prepareDocument(doc, ["documents", i]));
    if (prepared) documents.push(prepared);
  }
  bag.throwIfAny();
  return { documentNumber, documents };
}

/**
 * POST /subject/people: registers a person, or updates the one with the same document pair (same id). `ask` is
 * a boolean SQL expression over the saved `people` row that a caller above wants answered in the same statement,
 * returned as `asked` (the rails ask whether money waits for this payer: one round trip instead of two on the
 * busiest write of the API). A new person, and the documents that come with anyone, take room in the company's
 * quotas (`quotas.ts`); an update of a person already registered is no new subject and is never refused for the
 * subjects quota.
 */
export async function registerPerson(
  sql: Sql,
  companyId: string,
  input: PersonCreateInput,
  quotas: StoredQuotas,
  opts: { ask?: (tx: SqlOrTransaction) => postgres.Fragment } = {},
) {
  const { documentNumber, documents } = await checkRegistration(input);
  // `count`: a new person takes its room in this same statement, so a registration stays one round trip (with
  // documents, the transaction takes the room of everything at its end instead)
  const upsert = (tx: SqlOrTransaction, count: boolean) =>
    saveSubject(tx, "person", companyId, input, documentNumber, { quotas: count ? quotas : undefined, ask: opts.ask });
  const use = documentsUsage(documents);
  // one statement needs no transaction; documents and the status change they may bring go with the person
  const saved = await withinQuotas(quotas, async () => {
    if (!documents.length) return await upsert(sql, true);
    if (use.documentBytes) await refuseEarly(sql, companyId, quotas, use);
    return await sql.begin(async (tx) => {
      const saved = await upsert(tx, false);
      for (const doc of documents) await insertDocument(tx, companyId, saved.id, doc);
      await reviewAfterDocuments(tx, companyId, saved.id);
      await claimRoom(tx, companyId, quotas, { ...use, people: saved.created ? 1 : 0 });
      return saved;
    });
  });
  // a new person without documents is complete as returned; otherwise read it back with its documents
  const subject = saved.created && !documents.length
    ? { ...saved, documents: [] }
    : await getSubjectOf(sql, "person", companyId, saved.id);
  return { subject, created: saved.created, asked: saved.asked };
}

/** The rules across fields, on the person an update would leave. */
const checkPatch: PatchCheck<"person"> = (current, fields, bag) => {
  checkPerson({ ...current, ...fields, fiscal_country: fields.fiscal_country ?? current.fiscal_country }, bag);
};

/** PUT /subject/people/:id (`update`), and its rules without writing (`check`). */
export const personUpdates = subjectUpdates("person", checkPatch);

/**
 * A reproved person whose documents now cover the mandatory set goes to back-office review
 * (docs/clearance.md, Documents arrive). Returns the new status when it changed.
 */
export async function reviewAfterDocuments(tx: TransactionSql, companyId: string, personId: string) {
  // Two uploads that together complete the set must not each miss the other's document: the row lock makes
  // them take turns, and the next statement sees what the first one committed. NO KEY UPDATE, not UPDATE,
  // because each upload already holds the KEY SHARE lock its document's foreign key took on this row.
  await tx`select 1 from people where company_id = ${companyId} and id = ${personId} for no key update`;
  const [person] = await tx<{ status: string; labels: string[] }[]>`
    select p.status, coalesce(array_agg(l) filter (where l is not null), '{}') as labels
    from people p
    left join documents d on d.person_id = p.id
    left join lateral unnest(d.labels) as l on true
    where p.company_id = ${companyId} and p.id = ${personId}
    group by p.status`;
  if (person?.status !== "reproved" || missingMandatoryDocuments(person.labels).length) return null;
  await setStatus(tx, companyId, personId, { status: "waiting_approval", reason: "" });
  return "waiting_approval" as const;
}
