/**
 * `Idempotency-Key` on the API's POST requests: the middleware that replays a stored answer, and the header's place in
 * the OpenAPI document. What is stored, and how, is domain/requests/idempotency.ts.
 */

import type { Context, Next } from "hono";
import type { OpenAPIHono } from "@hono/zod-openapi";
import { ApiError, BLANK, unprocessable, validationFailed } from "../../domain/basics/errors.ts";
import {
  claimIdempotencyKey,
  completeIdempotentRequest,
  releaseIdempotencyKey,
  requestFingerprint,
} from "../../domain/requests/idempotency.ts";
import type { Sql } from "../../domain/infra/db.ts";
import type { SecretBox } from "../../domain/infra/secret_box.ts";
import { log } from "../../domain/basics/log.ts";
import type { AppEnv } from "../openapi/validation.ts";
import { requestIdHeader } from "../openapi/schemas.ts";

const HEADER = "idempotency-key";
const MAX_KEY_LENGTH = 255;
const PRINTABLE_ASCII = /^[\x20-\x7e]+$/;

export const REUSED_DETAIL = "Idempotency-Key reused with a different request";
const IN_FLIGHT_DETAIL = "A request with this Idempotency-Key is still being processed: retry it later";
export const UNREADABLE_DETAIL = "The answer stored for this Idempotency-Key cannot be read, and the request is " +
  "not run again: it already ran once. Look up its outcome, or retry later";

/**
 * Answers that are not kept, so the same key can be retried: server errors (the request may not have run, or not
 * fully), and 408 and 429, which tell the client to try again.
 */
const transient = (status: number) => status >= 500 || status === 408 || status === 429;

function checkKey(key: string) {
  const problem = key.length === 0
    ? BLANK
    : key.length > MAX_KEY_LENGTH
    ? `is too long (maximum is ${MAX_KEY_LENGTH} characters)`
    : PRINTABLE_ASCII.test(key)
    ? null
    : "must be printable ASCII characters";
  if (problem) throw validationFailed({ [HEADER]: [problem] }, 400);
}

/**
 * `Idempotency-Key` on authenticated POST requests (docs/api.md, "Idempotency-Key"). Mounted after authentication and
 * the body read: the key belongs to the company, and "the same request" means the same method, path and raw body.
 * The key is claimed before the handler runs and the answer stored after it; a replay answers the stored status,
 * content type and body with `Idempotent-Replayed: true`. Answers are stored sealed with `box` (they may carry a
 * webhook signing secret); one that does not open answers 500 and is not run again (docs/production.md). `when`
 * tells whether a route takes the request: a 404 or 405 is not worth a claim.
 */
export function idempotentPosts(
  sql: Sql,
  opts: { when: (c: Context) => boolean; box: () => Promise<SecretBox> },
): (c: Context<AppEnv>, next: Next) => Promise<void> {
  return async (c, next) => {
    const key = c.req.method === "POST" ? c.req.header(HEADER) : undefined;
    const companyId = c.get("companyId");
    if (key === undefined || !companyId || !opts.when(c)) return next();
    checkKey(key);

    const url = new URL(c.req.url);
    // through c.req: read_body.ts keeps the bytes read there
    const body = c.req.raw.body ? new Uint8Array(await c.req.arrayBuffer()) : new Uint8Array();
    const fingerprint = await requestFingerprint(c.req.method, url.pathname + url.search, body);
    const box = await opts.box();
    const claim = await claimIdempotencyKey(sql, box, companyId, key, fingerprint);
    if (claim.kind === "mismatch") throw unprocessable(REUSED_DETAIL);
    if (claim.kind === "in_flight") throw new ApiError(409, { detail: IN_FLIGHT_DETAIL }, { "retry-after": "1" });
    if (claim.kind === "unreadable") {
      // the key id of the sealing key is in the reason, never the answer
      log.error("idempotent answer does not open", {
        request_id: c.get("requestId"),
        company_id: companyId,
        error: claim.reason,
      });
      throw new ApiError(500, { detail: UNREADABLE_DETAIL });
    }
    if (claim.kind === "replay") {
      const { status, contentType, body } = claim.response;
      const headers: Record<string, string> = { "idempotent-replayed": "true" };
      if (contentType) headers["content-type"] = contentType;
      // the answer set, not returned: the middleware is called as the body read's continuation (app.ts)
      c.res = new Response(status === 204 || status === 304 ? null : body as Uint8Array<ArrayBuffer>, {
        status,
        headers,
      });
      return;
    }

    const release = () => releaseIdempotencyKey(sql, companyId, key, claim.claimId);
    try {
      await next(); // an ApiError or a crash in the handler is already a response here (app.onError)
    } catch (err) {
      await release().catch(() => {});
      throw err;
    }
    try {
      const res = c.res;
      if (transient(res.status)) return await release();
      await completeIdempotentRequest(sql, box, companyId, key, claim.claimId, {
        status: res.status,
        contentType: res.headers.get("content-type"),
        body: new Uint8Array(await res.clone().arrayBuffer()),
      });
    } catch (err) {
      // the request ran and its answer goes out; the key stays claimed until the claim times out
      log.error("idempotency key not recorded", {
        request_id: c.get("requestId"),
        error: err instanceof Error ? err.message : String(err),
      });
    }
  };
}

/**
 * Declares the header (and its 409 and 422 answers) on every POST operation under /api of the OpenAPI document, in
 * one place instead of on each route. Call it once every route is registered.
 */
export function documentIdempotencyKey(registry: OpenAPIHono["openAPIRegistry"]) {
  registry.registerComponent("parameters", "IdempotencyKey", {
    name: "Idempotency-Key",
    in: "header",
    required: false,
    description: "Makes a retry safe: within 24 hours, the same key with the same method, path and body answers the " +
      "first response again (status and body) with `Idempotent-Replayed: true` instead of running the request " +
      "again. 1 to 255 printable ASCII characters; a UUID per operation is a good choice. Server errors (5xx), 408 " +
      "and 429 are not kept, so the same key can be retried after them.",
    schema: { type: "string", minLength: 1, maxLength: MAX_KEY_LENGTH, pattern: "^[\\x20-\\x7E]+$" },
  });
  const error = {
    headers: requestIdHeader,
    content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } },
  };
  for (const definition of registry.definitions) {
    if (definition.type !== "route") continue;
    const route = definition.route;
    if (route.method !== "post" || !route.path.startsWith("/api/")) continue;
    const parameter = { $ref: "#/components/parameters/IdempotencyKey" };
    const parameters: object[] = route.parameters ?? [];
    if (!parameters.some((p) => "$ref" in p && p.$ref === parameter.$ref)) {
      route.parameters = [...parameters, parameter] as typeof route.parameters;
    }
    const inFlight = "a request with the same Idempotency-Key is still being processed";
    const conflict = route.responses[409];
    route.responses = {
      ...route.responses,
      409: conflict && "description" in conflict
        ? { ...conflict, description: `${conflict.description}; or ${inFlight}` }
        : { description: inFlight[0].toUpperCase() + inFlight.slice(1), ...error },
    };
    const reused = "the Idempotency-Key was used for a different request";
    const unprocessable = route.responses[422];
    if (!unprocessable) route.responses[422] = { description: reused, ...error };
    else if ("description" in unprocessable) {
      route.responses[422] = { ...unprocessable, description: `${unprocessable.description}; or ${reused}` };
    }
  }
}
