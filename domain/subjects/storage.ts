import type { Tx } from "../platform/db.ts";

/**
 * Where document bytes live. Postgres for now; this module is the seam where object storage would go,
 * so nothing else writes `document_blobs` (no endpoint reads the bytes back yet).
 */
export async function putBlob(tx: Tx, documentId: string, bytes: Uint8Array): Promise<void> {
  await tx`insert into document_blobs (document_id, bytes) values (${documentId}, ${bytes})`;
}
