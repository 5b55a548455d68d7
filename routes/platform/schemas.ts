import { z } from "@hono/zod-openapi";
import "./validation.ts"; // installs the message vocabulary before any schema parses
import { UUID_RE } from "../../domain/platform/ids.ts";

/** A required string: missing, null or blank answers "can't be blank". */
export const requiredText = (max = 255) => z.string().trim().min(1).max(max);

/** An optional string: null clears it, "" counts as null. */
export const optionalText = (max = 255) => z.string().trim().max(max).nullish().transform((v) => v === "" ? null : v);

export const uuid = z.string().regex(UUID_RE, "is invalid").transform((s) => s.toLowerCase());

export const IdParam = z.object({ id: uuid.openapi({ param: { name: "id", in: "path" }, format: "uuid" }) });

/** A decimal amount with at most two places, as a string (a JSON number is read as its text, never as a float). */
export const decimalString = z.union([z.string().trim(), z.number()])
  .transform((v) => typeof v === "number" ? String(v) : v)
  // any number of digits: an amount too large is refused by the limit it breaks, not as a format error
  .pipe(z.string().max(40).regex(/^\d+(\.\d{1,2})?$/, "has invalid format"))
  .openapi({ type: "string", example: "1500.00" });

export const ErrorBody = z.object({
  errors: z.record(z.string(), z.unknown()).openapi({
    example: { document_number: ["is invalid"] },
    description: "Field errors `{field: [message]}`, nested for sub-objects, or `{detail: message}`",
  }),
}).openapi("Error");

/** The error responses every authenticated route can give, for the OpenAPI document. */
export const errorResponses = {
  400: { description: "Malformed body or missing fields", content: { "application/json": { schema: ErrorBody } } },
  401: { description: "Missing or invalid bearer token", content: { "application/json": { schema: ErrorBody } } },
  404: { description: "Unknown id (or another company's)", content: { "application/json": { schema: ErrorBody } } },
  422: { description: "Invalid field values", content: { "application/json": { schema: ErrorBody } } },
  429: {
    description: "Over the company's request rate; `Retry-After` says in how many seconds to try again",
    headers: { "Retry-After": { schema: { type: "integer" }, description: "Seconds" } },
    content: { "application/json": { schema: ErrorBody } },
  },
} as const;

export const jsonBody = <T extends z.ZodType>(schema: T) => ({
  required: true,
  content: { "application/json": { schema } },
});

export const jsonResponse = <T extends z.ZodType>(description: string, schema: T) => ({
  description,
  content: { "application/json": { schema } },
});
