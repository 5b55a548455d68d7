import { createRoute, z } from "@hono/zod-openapi";
import { uploadDocument } from "../../domain/subjects/document_uploads.ts";
import type { Deps } from "../../domain/platform/deps.ts";
import { newRouter } from "../platform/router.ts";
import { alsoCheck } from "../platform/validation.ts";
import { prepareDocument } from "../../domain/subjects/documents.ts";
import { bodyErrorResponses, IdParam, jsonBody, jsonResponse } from "../platform/schemas.ts";
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

export function documentRoutes({ sql }: Deps) {
  return newRouter().openapi(upload, async (c) => {
    const doc = await uploadDocument(sql, c.get("companyId"), c.req.valid("param").id, c.req.valid("json").document);
    return c.json({ data: doc }, 201);
  }, alsoCheck(DocumentUploadBody, (body) => prepareDocument(body.document ?? {})));
}
