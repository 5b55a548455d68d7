/**
 * The shape of a document as sent: inside a person's `documents` or as the body of an upload. Its own file because
 * both subjects/schemas.ts and the document routes take it.
 */

import { z } from "@hono/zod-openapi";
import { ALLOWED_FILE_TYPES } from "../../domain/subjects/documents.ts";
import { optionalText, requiredText } from "../openapi/schemas.ts";

/** One document, as sent inside `person.documents` or as the `document` of an upload. */
export const DocumentInput = z.object({
  labels: z.array(requiredText(100)).min(1).max(20).openapi({ example: ["cpf-number"] }),
  file_type: requiredText(100).openapi({
    example: "application/pdf",
    description: `One of ${ALLOWED_FILE_TYPES.join(", ")}, and what the bytes really are`,
  }),
  file_data: z.string().nullish().openapi({ description: "Base64 content; at most 15 MB decoded" }),
  file_name: optionalText().openapi({
    example: "cpf.pdf",
    description: "With an extension; no control or bidirectional formatting characters",
  }),
  file_url: optionalText(2048).openapi({ example: "https://example.com/cpf.pdf" }),
}).openapi("DocumentInput");

export const DocumentUploadBody = z.object({ document: DocumentInput });

export const DOCUMENT_UPLOAD_EXAMPLE: z.input<typeof DocumentUploadBody> = {
  document: { labels: ["address-proof"], file_type: "application/pdf", file_url: "https://example.com/address.pdf" },
};
