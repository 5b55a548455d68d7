/** A subject's documents: upload, list, one document's metadata, and its bytes as a download of their file type. */

import { createRoute, z } from "@hono/zod-openapi";
import { uploadDocument } from "../../domain/subjects/document_uploads.ts";
import type { Deps } from "../../domain/infra/deps.ts";
import { newRouter } from "../openapi/router.ts";
import { alsoCheck } from "../openapi/validation.ts";
import { getDocument, getDocumentFile, listDocuments, prepareDocument } from "../../domain/subjects/documents.ts";
import {
  bodyErrorResponses,
  errorResponses,
  IdParam,
  jsonBody,
  jsonResponse,
  requestIdHeader,
  uuid,
} from "../openapi/schemas.ts";
import { DOCUMENT_UPLOAD_EXAMPLE, DocumentUploadBody } from "./document_schemas.ts";
import { DocumentSummary } from "./schemas.ts";

const upload = createRoute({
  operationId: "uploadDocument",
  method: "post",
  path: "/api/v1/subject/{id}/documents",
  tags: ["Documents"],
  summary: "Upload a customer document, by Base64 file (at most 15 MB) or by URL",
  request: { params: IdParam, body: jsonBody(DocumentUploadBody, DOCUMENT_UPLOAD_EXAMPLE) },
  responses: {
    201: jsonResponse("Document stored", z.object({ data: DocumentSummary })),
    ...bodyErrorResponses,
    413: { ...bodyErrorResponses[413], description: "File over 15 MB (or body over 22 MB)" },
  },
});

const DocumentParams = IdParam.extend({
  document_id: uuid.openapi({
    param: { name: "document_id", in: "path" },
    format: "uuid",
    description: "The document's id",
  }),
});

const list = createRoute({
  operationId: "listDocuments",
  method: "get",
  path: "/api/v1/subject/{id}/documents",
  tags: ["Documents"],
  summary: "A subject's documents, oldest first",
  request: { params: IdParam },
  responses: { 200: jsonResponse("The documents", z.object({ data: z.array(DocumentSummary) })), ...errorResponses },
});

const show = createRoute({
  operationId: "getDocument",
  method: "get",
  path: "/api/v1/subject/{id}/documents/{document_id}",
  tags: ["Documents"],
  summary: "One document's metadata",
  request: { params: DocumentParams },
  responses: { 200: jsonResponse("The document", z.object({ data: DocumentSummary })), ...errorResponses },
});

const file = createRoute({
  operationId: "downloadDocument",
  method: "get",
  path: "/api/v1/subject/{id}/documents/{document_id}/file",
  tags: ["Documents"],
  summary: "The document's bytes, as its file_type (404 for a document given by URL)",
  request: { params: DocumentParams },
  responses: {
    200: {
      description: "The file",
      headers: requestIdHeader,
      content: { "application/octet-stream": { schema: z.string().openapi({ format: "binary" }) } },
    },
    ...errorResponses,
  },
});

/** A file name safe in a header: what is not plain ASCII becomes "_" (the original stays in the metadata). */
const headerSafe = (name: string) => name.replace(/[^A-Za-z0-9._ -]/g, "_").slice(0, 200) || "document";

export function documentRoutes({ sql, config }: Deps) {
  return newRouter()
    .openapi(upload, async (c) => {
      const { id } = c.req.valid("param");
      const doc = await uploadDocument(sql, c.get("companyId"), id, c.req.valid("json").document, config.limits);
      return c.json({ data: doc }, 201);
    }, alsoCheck(DocumentUploadBody, (body) => prepareDocument(body.document ?? {})))
    .openapi(list, async (c) => {
      return c.json({ data: await listDocuments(sql, c.get("companyId"), c.req.valid("param").id) }, 200);
    })
    .openapi(show, async (c) => {
      const { id, document_id } = c.req.valid("param");
      return c.json({ data: await getDocument(sql, c.get("companyId"), id, document_id) }, 200);
    })
    .openapi(file, async (c) => {
      const { id, document_id } = c.req.valid("param");
      const { doc, bytes } = await getDocumentFile(sql, c.get("companyId"), id, document_id);
      // served as a download of the type it was checked to be, never sniffed into something a browser runs
      return c.body(bytes as Uint8Array<ArrayBuffer>, 200, {
        "content-type": doc.file_type,
        "content-disposition": `attachment; filename="${headerSafe(doc.file_name ?? "document")}"`,
        "x-content-type-options": "nosniff",
        "cache-control": "private, no-store",
      });
    });
}
