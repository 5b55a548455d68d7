import { fileTypeFromBuffer } from "file-type";
import type { Tx } from "../platform/db.ts";
import { ApiError, ErrorBag } from "../platform/errors.ts";
import { newId } from "../platform/ids.ts";
import { putBlob } from "./storage.ts";

/** One document as a client sends it: Base64 `file_data` with a `file_name`, or a `file_url`. */
export type DocumentInput = {
  labels: string[];
  file_type: string;
  file_data?: string | null;
  file_name?: string | null;
  file_url?: string | null;
};

export const MAX_FILE_BYTES = 15 * 1024 * 1024;

/** Labels that satisfy each mandatory document of a customer above the yearly threshold (decisions §8). */
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

/** A stored document as a person's `documents` array and the upload answer show it (decisions §5). */
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

/** The MIME type the bytes really are: magic numbers first, then plain UTF-8 text. */
async function detectMime(bytes: Uint8Array, claimed: string): Promise<string | null> {
  const detected = await fileTypeFromBuffer(bytes);
  if (detected) return normalizeMime(detected.mime);
  return TEXT_TYPES.has(claimed) && isUtf8Text(bytes) ? claimed : null;
}

/**
 * Checks a document the way interface.md "Errors" item 4 asks: every failure is a 400 naming the field,
 * an oversized file a 413. `path` prefixes the field names (["documents", 0]) when the document is nested.
 * A document whose labels or file_type were refused for their shape is still checked on the rest.
 */
export async function prepareDocument(
  input: Partial<DocumentInput>,
  path: (string | number)[] = [],
): Promise<PreparedDocument> {
  const bag = new ErrorBag();
  const at = (field: string) => [...path, field];
  const fileType = input.file_type == null ? null : normalizeMime(input.file_type);
  const base = { labels: input.labels ?? [], fileType: fileType ?? "" };

  if (input.file_data == null || input.file_data === "") {
    if (!input.file_url) {
      bag.add(at("file_data"), "can't be blank");
      bag.add(at("file_url"), "can't be blank");
    } else if (!/^https?:\/\/[^\s/$.?#][^\s]*$/i.test(input.file_url)) {
      bag.add(at("file_url"), "has invalid format");
    }
    bag.throwIfAny(400);
    return { ...base, fileName: input.file_name ?? null, fileUrl: input.file_url!, bytes: null };
  }

  if (!input.file_name) bag.add(at("file_name"), "can't be blank");
  else if (!/^[^/\\]*[^/\\.]\.[A-Za-z0-9]{1,10}$/.test(input.file_name)) {
    bag.add(at("file_name"), "must include a file extension");
  }

  // 4/3 of the decoded size: refuse before decoding anything far too large
  if (input.file_data.length > Math.ceil(MAX_FILE_BYTES / 3) * 4 + 1024) throw tooLarge(at("file_data"));
  const bytes = decodeBase64(input.file_data);
  if (!bytes) bag.add(at("file_data"), "is not valid Base64");
  else if (bytes.length > MAX_FILE_BYTES) throw tooLarge(at("file_data"));
  else if (fileType != null && (await detectMime(bytes, fileType)) !== fileType) {
    bag.add(at("file_type"), "does not match content");
  }

  bag.throwIfAny(400);
  return { ...base, fileName: input.file_name!, fileUrl: null, bytes };
}

function tooLarge(path: (string | number)[]) {
  const bag = new ErrorBag();
  bag.add(path, "is too large (maximum is 15 MB)");
  return new ApiError(413, bag.errors);
}

/** Stores a checked document of a person; the caller's transaction also covers any status change. */
export async function insertDocument(tx: Tx, companyId: string, personId: string, doc: PreparedDocument) {
  const id = newId();
  await tx`
    insert into documents (id, company_id, person_id, labels, file_type, file_name, file_url, size)
    values (${id}, ${companyId}, ${personId}, ${doc.labels}, ${doc.fileType}, ${doc.fileName}, ${doc.fileUrl},
            ${doc.bytes?.length ?? null})`;
  if (doc.bytes) await putBlob(tx, id, doc.bytes);
  return id;
}
