/**
 * Where document bytes live. Postgres for now; this module is the seam where object storage would go,
 * so nothing else reads or writes `document_blobs`.
 */
import type { SqlOrTransaction } from "../infra/db.ts";

export async function putBlob(tx: SqlOrTransaction, documentId: string, bytes: Uint8Array): Promise<void> {
  await tx`insert into document_blobs (document_id, bytes) values (${documentId}, ${bytes})`;
}

/** The bytes of a stored document, or null when it has none (a document given by URL). */
export async function getBlob(sql: SqlOrTransaction, documentId: string): Promise<Uint8Array | null> {
  const [row] = await sql<{ bytes: Uint8Array }[]>`select bytes from document_blobs where document_id = ${documentId}`;
  return row?.bytes ?? null;
}
