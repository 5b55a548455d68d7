/**
 * A person's documents: checking one (the bytes' real type, Base64, name, 15 MB), storing and reading them, and the
 * mandatory documents the yearly limit asks for (docs/clearance.md). The bytes themselves are storage.ts's.
 */
import { fileTypeFromBuffer } from "file-type";
import type { SqlOrTransaction } from "../infra/db.ts";
import { ApiError, ErrorBag, invalidFormat, notFound } from "../basics/errors.ts";
import { newId } from "../basics/ids.ts";
import { getBlob, putBlob } from "./storage.ts";

/** One document as a client sends it: Base64 `file_data` with a `file_name`, or a `file_url`. */
export type DocumentInput = {
  labels: string[];
  file_type: string;
  file_data?: string | null;
  file_name?: string | null;
  file_url?: string | null;
};

export const MAX_FILE_BYTES = 15 * 1024 * 1024;

/** Labels that satisfy each mandatory document of a customer above the yearly threshold (docs/clearance.md). */
export const MANDATORY_DOCUMENTS = {
  identity: ["rg-number", "cpf-number", "rg-photo"],
  address: ["address-proof"],
  tax: ["revenue-tax-declaration"],
} as const;
export type MandatoryDocument = keyof typeof MANDATORY_DOCUMENTS;

/** Which mandatory documents are still missing, given the labels of every document on file. */
export function missingMandatoryDocuments(labelsOnFile: readonly string[]): MandatoryDocument[] {
  const have = new Set(labelsOnFile);
  return (Object.keys(MANDATORY_DOCUMENTS) as MandatoryDocument[])
    .filter((kind) => !MANDATORY_DOCUMENTS[kind].some((label) => have.has(label)));
}

/** A stored document as a person's `documents` array and the upload answer show it. */
export type DocumentSummary = {
  id: string;
  labels: string[];
  file_type: string;
  file_name: string | null;
  file_url: string | null;
  size: number | null;
  inserted_at: string;
};

export type PreparedDocument = {
  labels: string[];
  fileType: string;
  fileName: string | null;
  fileUrl: string | null;
  bytes: Uint8Array | null;
};

const MIME_ALIASES: Record<string, string> = { "image/jpg": "image/jpeg", "application/x-pdf": "application/pdf" };
const TEXT_TYPES = new Set(["text/plain", "text/csv"]);

/**
 * The file types a document may be: what identity, address and tax documents come as (scans, photos, PDFs, plain
 * text). Anything else, an executable first of all, has no business among them. GIF is left out: 256 colours lose
 * the detail a document check needs.
 */
export const ALLOWED_FILE_TYPES = [
  "application/pdf",
  "image/jpeg",
  "image/png",
  "image/webp",
  "image/heic",
  "image/heif",
  "image/tiff",
  "text/plain",
  "text/csv",
] as const;
const ALLOWED: ReadonlySet<string> = new Set(ALLOWED_FILE_TYPES);

/**
 * Characters a file name must not hold: C0 and C1 controls (CR/LF among them), line and paragraph separators, and
 * the bidirectional formatting characters that make `invoice\u202efdp.exe` display as "invoiceexe.pdf".
 */
// deno-lint-ignore no-control-regex -- matching control characters is the point of this pattern
const UNSAFE_NAME_CHARS = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]/;

const normalizeMime = (mime: string) => {
  const bare = mime.split(";")[0].trim().toLowerCase();
  return MIME_ALIASES[bare] ?? bare;
};

function decodeBase64(data: string): Uint8Array | null {
  const body = data.replace(/^data:[^;,]*;base64,/, "");
  if (!/^[A-Za-z0-9+/=\s]*$/.test(body)) return null;
  try {
    const bytes = Uint8Array.fromBase64(body);
    return bytes.length > 0 ? bytes : null;
  } catch {
    return null;
  }
}

function isUtf8Text(bytes: Uint8Array): boolean {
  if (bytes.includes(0)) return false;
  try {
    new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    return true;
  } catch {
    return false;
  }
}

/**
 * A PDF ends with `%%EOF` (and perhaps line breaks). file-type only reads the `%PDF-` at the start, which anything
 * with five bytes put in front of it also has; bytes after the end marker are how a PDF carries a second file (a
 * ZIP or JAR, whose directory sits at the end) that another program opens.
 */
function endsLikePdf(bytes: Uint8Array): boolean {
  const tail = new TextDecoder("latin1").decode(bytes.subarray(Math.max(0, bytes.length - 1024)));
  return /%%EOF[\s\0]*$/.test(tail);
}

/** The MIME type the bytes really are: magic numbers first, then plain UTF-8 text. */
async function detectMime(bytes: Uint8Array, claimed: string): Promise<string | null> {
  const detected = await fileTypeFromBuffer(bytes);
  if (detected) {
    const mime = normalizeMime(detected.mime);
    return mime === "application/pdf" && !endsLikePdf(bytes) ? null : mime;
  }
  return TEXT_TYPES.has(claimed) && isUtf8Text(bytes) ? claimed : null;
}

/** A type off the list and a name with control or bidi characters are invalid values (422), not upload failures. */
function checkTypeAndName(
  bag: ErrorBag,
  at: (field: string) => (string | number)[],
  input: Partial<DocumentInput>,
) {
  // a file_type refused for its shape was reported by the request schema already
  if (input.file_type == null) return false;
  const fileType = normalizeMime(input.file_type);
  if (!ALLOWED.has(fileType)) bag.add(at("file_type"), `must be one of: ${ALLOWED_FILE_TYPES.join(", ")}`);
  if (input.file_name && UNSAFE_NAME_CHARS.test(input.file_name)) {
    bag.add(at("file_name"), "must not contain control or bidirectional formatting characters");
  }
  return ALLOWED.has(fileType);
}

/**
 * Checks a document as docs/api.md, "Documents and bank accounts", says: an upload failure (a missing or extension-less
 * file_name, bad Base64, a file_type the bytes are not) is a 400 naming the field, an oversized file a 413. A file_type
 * off the allowed list or a file_name with control or bidi characters is an invalid value: 422, unless an upload
 * failure comes with it (400, every error listed). `path` prefixes the field names (["documents", 0]) when the
 * document is nested. A document whose labels or file_type were refused for their shape is still checked on the rest.
 */
export async function prepareDocument(
  input: Partial<DocumentInput>,
  path: (string | number)[] = [],
): Promise<PreparedDocument> {
  const at = (field: string) => [...path, field];
  const bag = new ErrorBag();
  let uploadFailed = false;
  const fail = (field: string, message: string) => {
    uploadFailed = true;
    bag.add(at(field), message);
  };
  const fileType = input.file_type == null ? null : normalizeMime(input.file_type);
  const base = { labels: input.labels ?? [], fileType: fileType ?? "" };
  const allowed = checkTypeAndName(bag, at, input);

  if (input.file_data == null || input.file_data === "") {
    if (!input.file_url) {
      fail("file_data", "can't be blank");
      fail("file_url", "can't be blank");
    } else if (!/^https?:\/\/[^\s/$.?#][^\s]*$/i.test(input.file_url)) {
      fail("file_url", invalidFormat("an http:// or https:// URL", "https://example.com/id.pdf"));
    }
    bag.throwIfAny(uploadFailed ? 400 : 422);
    return { ...base, fileName: input.file_name ?? null, fileUrl: input.file_url!, bytes: null };
  }

  if (!input.file_name) fail("file_name", "can't be blank");
  else if (!/^[^/\\]*[^/\\.]\.[A-Za-z0-9]{1,10}$/.test(input.file_name)) {
    fail("file_name", "must include a file extension");
  }

  // 4/3 of the decoded size: refuse before decoding anything far too large
  if (input.file_data.length > Math.ceil(MAX_FILE_BYTES / 3) * 4 + 1024) throw tooLarge(at("file_data"));
  const bytes = decodeBase64(input.file_data);
  if (!bytes) fail("file_data", "is not valid Base64");
  else if (bytes.length > MAX_FILE_BYTES) throw tooLarge(at("file_data"));
  else if (allowed && fileType != null && (await detectMime(bytes, fileType)) !== fileType) {
    fail("file_type", "does not match content");
  }

  bag.throwIfAny(uploadFailed ? 400 : 422);
  return { ...base, fileName: input.file_name!, fileUrl: null, bytes };
}

function tooLarge(path: (string | number)[]) {
  const bag = new ErrorBag();
  bag.add(path, "is too large (maximum is 15 MB)");
  return new ApiError(413, bag.errors);
}

/** Stores a checked document of a person; the caller's transaction also covers any status change. */
export async function insertDocument(tx: SqlOrTransaction, companyId: string, personId: string, doc: PreparedDocument) {
  const id = newId();
  await tx`
    insert into documents (id, company_id, person_id, labels, file_type, file_name, file_url, size)
    values (${id}, ${companyId}, ${personId}, ${doc.labels}, ${doc.fileType}, ${doc.fileName}, ${doc.fileUrl},
            ${doc.bytes?.length ?? null})`;
  if (doc.bytes) await putBlob(tx, id, doc.bytes);
  return id;
}

/** One subject's documents as `documents` of the person object shows them, oldest first (404 for another's subject). */
export async function listDocuments(
  sql: SqlOrTransaction,
  companyId: string,
  subjectId: string,
): Promise<DocumentSummary[]> {
  const [subject] = await sql`select 1 from people where company_id = ${companyId} and id = ${subjectId}`;
  if (!subject) throw notFound();
  return await sql<DocumentSummary[]>`
    ${selectDocuments(sql)} where company_id = ${companyId} and person_id = ${subjectId} order by id`;
}

/** One document of the subject (404 when either is not the company's). */
export async function getDocument(
  sql: SqlOrTransaction,
  companyId: string,
  subjectId: string,
  id: string,
): Promise<DocumentSummary> {
  const [doc] = await sql<DocumentSummary[]>`
    ${selectDocuments(sql)} where company_id = ${companyId} and person_id = ${subjectId} and id = ${id}`;
  if (!doc) throw notFound();
  return doc;
}

/** The bytes of one document, with what to serve them as; 404 for a document given by URL (it has no bytes here). */
export async function getDocumentFile(sql: SqlOrTransaction, companyId: string, subjectId: string, id: string) {
  const doc = await getDocument(sql, companyId, subjectId, id);
  const bytes = await getBlob(sql, id);
  if (!bytes) throw new ApiError(404, { detail: "this document was given by URL: read it at its file_url" });
  return { doc, bytes };
}

function selectDocuments(sql: SqlOrTransaction) {
  return sql`
    select id, labels, file_type, file_name, file_url, size,
           to_char(inserted_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS') as inserted_at
    from documents`;
}
