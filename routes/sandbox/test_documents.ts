/**
 * `GET /api/sandbox/test_documents`: fresh valid documents to test with (docs/sandbox.md, "Test documents"). Apart from
 * the other sandbox routes because it reads and writes nothing: it only asks the generators for values.
 */

import { createRoute, z } from "@hono/zod-openapi";
import { generateTestDocuments } from "../../domain/rails/test_documents.ts";
import { newRouter } from "../openapi/router.ts";
import { errorResponses, jsonResponse } from "../openapi/schemas.ts";
import { TestDocument, TestDocumentsQuery } from "./schemas.ts";

const testDocuments = createRoute({
  operationId: "listSandboxTestDocuments",
  method: "get",
  path: "/api/sandbox/test_documents",
  tags: ["Sandbox"],
  summary: "Fresh valid test documents of one type (CPF, CNPJ, CURP, RFC, NIT, CLABE, PIX keys, IBAN...)",
  request: { query: TestDocumentsQuery },
  responses: {
    200: jsonResponse("`count` distinct valid values", z.object({ data: z.array(TestDocument) })),
    ...errorResponses,
  },
});

/** A read (200): nothing is stored, so two calls give different values and neither is remembered. */
export function sandboxTestDocumentRoutes() {
  return newRouter().openapi(testDocuments, (c) => {
    const { type, count } = c.req.valid("query");
    return c.json({ data: generateTestDocuments(type, count) }, 200);
  });
}
