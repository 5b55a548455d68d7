/**
 * The schema pieces every feature's routes share: text, ids, paging, amounts, the error responses and the helpers for
 * JSON bodies and answers. Apart from the features' schemas.ts so every route is validated and documented the same way.
 */

import { z } from "@hono/zod-openapi";
import "./validation.ts"; // installs the message vocabulary before any schema parses
import { UUID_RE } from "../../domain/basics/ids.ts";
import { amountProblem } from "../../domain/basics/money.ts";
import { MAX_BODY_BYTES, MAX_FILELESS_BODY_BYTES } from "../policy/read_body.ts";
import { MAX_JSON_DEPTH, MAX_JSON_VALUES } from "../policy/json_bounds.ts";

/** A required string: missing, null or blank answers "can't be blank". */
export const requiredText = (max = 255) => z.string().trim().min(1).max(max);

/** An optional string: null clears it, "" counts as null. */
export const optionalText = (max = 255) => z.string().trim().max(max).nullish().transform((v) => v === "" ? null : v);

export const uuid = z.string().regex(UUID_RE, "is invalid").transform((s) => s.toLowerCase());

export const IdParam = z.object({
  id: uuid.openapi({
    param: { name: "id", in: "path" },
    format: "uuid",
    description: "The id of the resource the path names (for `/subject/{id}/...`, the person's)",
  }),
});

/** The cursor of the lists that page by id. */
export const LastIdQuery = z.object({
  last_id: uuid.optional().openapi({ description: "Id of the last record of the previous page; absent for the first" }),
});

/**
 * The check of an amount of money, for a string schema: `amountProblem`'s refusal as the field's message (not a
 * decimal with a dot, more than two places, or below `least`), so every field of money says the same of the same value.
 */
export const amountCheck = (least: "positive" | "zero") => (value: string, ctx: z.RefinementCtx) => {
  const problem = amountProblem(value, least);
  if (problem) ctx.addIssue({ code: "custom", message: problem });
};

/** A decimal amount of 0 or more with at most two places, as a string (a JSON number is read as its text, never as a float). */
export const decimalString = z.union([z.string().trim(), z.number()])
  .transform((v) => typeof v === "number" ? String(v) : v)
  // any number of digits: an amount too large is refused by the limit it breaks, not as a format error
  .pipe(z.string().max(40).superRefine(amountCheck("zero")))
  .openapi({ type: "string", example: "1500.00" });

export const ErrorBody = z.object({
  errors: z.record(z.string(), z.unknown()).openapi({
    example: { document_number: ["is invalid"] },
    description: "Field errors `{field: [message]}`, nested for sub-objects, or `{detail: message}`",
  }),
}).openapi("Error");

/**
 * Every answer carries `x-request-id` (the caller's, when it sent a valid one, or a fresh UUID): declared once as a
 * component and referenced by every response of the document.
 */
export const REQUEST_ID_HEADER = {
  description: "The request's id: the `x-request-id` the client sent (1 to 128 of `A-Za-z0-9._:-`), or a new UUID; " +
    "logged with the request",
  schema: { type: "string" as const },
};
export const requestIdHeader = { "x-request-id": { $ref: "#/components/headers/RequestId" } };

type Header = { $ref: string } | { description: string; schema: { type: "string" | "integer" } };
const retryAfter: Record<string, Header> = { "Retry-After": { schema: { type: "integer" }, description: "Seconds" } };
const errorResponse = (description: string, headers: Record<string, Header> = {}) => ({
  description,
  headers: { ...requestIdHeader, ...headers },
  content: { "application/json": { schema: ErrorBody } },
});

/** The error responses any route of the service can give, whatever its path: busy, or broken. */
export const serverErrorResponses = {
  500: errorResponse("Unexpected failure; the body never says more, the logs do under the response's x-request-id"),
  503: errorResponse(
    "The instance is handling as many requests as it may, or its database is unavailable; try again after `Retry-After`",
    retryAfter,
  ),
} as const;

/** The error responses every authenticated route can give, for the OpenAPI document. */
export const errorResponses = {
  400: errorResponse("Malformed body or missing fields"),
  401: errorResponse("Missing or invalid bearer token; `WWW-Authenticate` says why", {
    "WWW-Authenticate": {
      schema: { type: "string" },
      description: 'RFC 6750: `Bearer` when no bearer token was sent, else `Bearer error="invalid_token", ' +
        'error_description="<why>"` (malformed, bad signature, expired, revoked, invalid claims)',
    },
  }),
  404: errorResponse("Unknown id (or another company's)"),
  422: errorResponse("Invalid field values"),
  429: errorResponse(
    "Over the company's request rate; `Retry-After` says in how many seconds to try again",
    retryAfter,
  ),
  ...serverErrorResponses,
} as const;

/** The routes that may give an endpoint a URL another active endpoint of the account already has. */
export const urlTakenResponse = {
  409: errorResponse("Another active endpoint of the account has this URL: `errors.url` names it"),
} as const;

/** A recover while another recover of the same endpoint runs (docs/webhooks.md, "Acknowledge and retry by hand"). */
export const recoverRunningResponse = {
  409: errorResponse("A recover of this endpoint is already running: try again once it has answered"),
} as const;

/** A route that prints the service's own address, which production needs PUBLIC_BASE_URL for (docs/errors.md). */
export const publicBaseUrlResponse = {
  503: errorResponse(
    "The instance is handling as many requests as it may, or its database is unavailable: try again after " +
      "`Retry-After`. Without `Retry-After`: in production, PUBLIC_BASE_URL is not set, and nothing is made until the " +
      "service's operator sets it",
    retryAfter,
  ),
} as const;

/**
 * Every POST and PUT: a body past its route's bounds is refused before it is parsed (docs/limits.md, "Request
 * bodies"), with figures from routes/policy/read_body.ts and json_bounds.ts.
 */
export const bodyErrorResponses = {
  ...errorResponses,
  413: errorResponse(
    `Body past its bounds, refused before it is parsed: over ${
      MAX_BODY_BYTES / 1024 / 1024
    } MB for the people and company ` +
      `routes and a document upload, over ${MAX_FILELESS_BODY_BYTES / 1024} KiB for any other route, or JSON ` +
      `of more than ${MAX_JSON_VALUES.toLocaleString("en-US")} values or nested more than ${MAX_JSON_DEPTH} deep; ` +
      "`errors.detail` names the bound",
  ),
} as const;

/**
 * A required JSON body. `example` is what `/docs` pre-fills and generated clients show: a body the route accepts as
 * it is (a test sends every one), since the examples of single fields do not add up to a valid body.
 */
export const jsonBody = <T extends z.ZodType>(schema: T, example?: z.input<T>) => ({
  required: true,
  content: { "application/json": { schema, ...(example === undefined ? {} : { example }) } },
});

export const jsonResponse = <T extends z.ZodType>(description: string, schema: T) => ({
  description,
  headers: requestIdHeader,
  content: { "application/json": { schema } },
});
