/**
 * The one place an error becomes an answer (`renderError`, mounted as `app.onError`): the domain throws small error
 * values and no handler builds an error body by hand (docs/errors.md). A file of its own so that every status an error
 * can turn into, and the `{errors: ...}` body of each, is read in one place.
 */

import type { ErrorHandler } from "hono";
import { HTTPException } from "hono/http-exception";
import { ApiError } from "../../domain/basics/errors.ts";
import { log } from "../../domain/basics/log.ts";
import { isDatabaseUnreachable } from "../../domain/infra/db.ts";
import type { AppEnv } from "../openapi/validation.ts";

/**
 * Answers an error with the `{errors: ...}` body: an `ApiError` as it says; Hono's own client errors (a body that is
 * not JSON, too large, a refused token) with their status and a `detail`; a lost database with 503 and `Retry-After`;
 * anything else with 500, logged with its stack under the request id and never shown to the client.
 *
 * @example
 * ```ts
 * const app = newRouter();
 * app.onError(renderError);
 * ```
 */
export const renderError: ErrorHandler<AppEnv> = (err, c) => {
  if (err instanceof ApiError) return c.json({ errors: err.errors }, err.status, err.headers);
  // a body that is not JSON is a 400 here (docs/errors.md), whether the JSON or its Content-Type is wrong
  if (err instanceof HTTPException && err.status === 415) {
    return c.json({ errors: { detail: "Content-Type must be application/json" } }, 400);
  }
  if (err instanceof HTTPException && err.status < 500) {
    const detail = err.status === 413
      ? "Payload Too Large"
      : err.status === 401
      ? "Unauthorized"
      : err.message || "Bad Request";
    return c.json({ errors: { detail } }, err.status);
  }
  if (isDatabaseUnreachable(err)) {
    // A transaction that lost its connection rolls back: the request may be sent again, with its Idempotency-Key
    // for the rare commit whose answer was lost (docs/errors.md, Status codes).
    log.warn("database unreachable", { request_id: c.get("requestId"), error: (err as Error).message });
    return c.json({ errors: { detail: "The database is unavailable; try again shortly" } }, 503, {
      "retry-after": "1",
    });
  }
  log.error("unhandled error", {
    request_id: c.get("requestId"),
    error: err instanceof Error ? `${err.name}: ${err.message}` : String(err),
    stack: err instanceof Error ? err.stack : undefined,
  });
  return c.json({ errors: { detail: "Internal Server Error" } }, 500);
};
