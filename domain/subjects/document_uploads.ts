/**
 * The upload of one document to an existing person. Apart from documents.ts because it needs people.ts, which imports
 * documents.ts for a registration's documents: in one file the two would import each other.
 */
import type { Sql } from "../infra/db.ts";
import { naiveUtc } from "../basics/time.ts";
import { type DocumentInput, type DocumentSummary, insertDocument, prepareDocument } from "./documents.ts";
import { assertPerson, reviewAfterDocuments } from "./people.ts";
import { claimRoom, documentsUsage, refuseEarly, type StoredQuotas, withinQuotas } from "./quotas.ts";

/**
 * POST /subject/:id/documents: checks the file (400 naming the field, 413 over 15 MB), stores it and, when it
 * completes the mandatory set of a reproved person, sends that person to review, all in one transaction, which
 * takes the document's room in the company's quotas last (422 naming the quota when it does not fit).
 */
export async function uploadDocument(
  sql: Sql,
  companyId: string,
  personId: string,
  input: DocumentInput,
  quotas: StoredQuotas,
): Promise<DocumentSummary> {
  // an unknown subject is a 404 even when the file is bad, and costs no decoding
  await assertPerson(sql, companyId, personId);
  const prepared = await prepareDocument(input);
  const use = documentsUsage([prepared]);
  return await withinQuotas(quotas, async () => {
    await refuseEarly(sql, companyId, quotas, use);
    return await sql.begin(async (tx) => {
      const id = await insertDocument(tx, companyId, personId, prepared);
      await reviewAfterDocuments(tx, companyId, personId);
      const [row] = await tx<(Omit<DocumentSummary, "inserted_at"> & { inserted_at: Date })[]>`
        select id, labels, file_type, file_name, file_url, size, inserted_at
        from documents where company_id = ${companyId} and id = ${id}`;
      await claimRoom(tx, companyId, quotas, use);
      return { ...row, inserted_at: naiveUtc(row.inserted_at) };
    });
  });
}
