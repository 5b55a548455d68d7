/**
 * The request id, metrics and log line of every request (`logRequests`). Mounted first, so the id is on every answer,
 * an error's too, and the duration covers the whole policy; a file of its own so that the labels it may use (closed
 * sets only) are read in one place (docs/limits.md, "What an anonymous request can grow").
 */

import type { MiddlewareHandler } from "hono";
import { log } from "../../domain/basics/log.ts";
import { methodLabel, metrics, statusLabel } from "../../domain/infra/metrics.ts";
import { nameRequestSpan } from "../../domain/infra/tracing.ts";
import { setAnswerHeader } from "./headers.ts";

/** A caller's `x-request-id` is kept when it looks like one; anything else is replaced by a UUID. */
export const REQUEST_ID_RE = /^[A-Za-z0-9._:\-]{1,128}$/;

/**
 * Gives the request its id (`c.get("requestId")` and the `x-request-id` header of the answer), runs `inner` (the rest
 * of the policy every request takes first, in this same layer of Hono's chain: app.ts), then, once the answer is
 * built, names the trace span, counts it in `http_requests_total` and `http_request_duration_seconds` by method, route
 * pattern and status, and writes one `request` log line (a refused token's line says why, as its 401 did).
 *
 * @example
 * ```ts
 * const app = newRouter();
 * app.use("*", logRequests(limitInFlight(max)));
 * ```
 */
export function logRequests(
  inner: MiddlewareHandler,
): MiddlewareHandler<{ Variables: { requestId: string; authFailure?: string } }> {
  return async (c, next) => {
    const started = performance.now();
    const given = c.req.header("x-request-id");
    const requestId = given && REQUEST_ID_RE.test(given) ? given : crypto.randomUUID();
    c.set("requestId", requestId);
    await inner(c, next);
    // set on the answer built, in place (headers.ts, setAnswerHeader)
    setAnswerHeader(c, "x-request-id", requestId);
    const seconds = (performance.now() - started) / 1000;
    const status = c.res.status;
    const routePath = c.req.routePath;
    const unmatched = (status === 404 || status === 405) && routePath.endsWith("*");
    // labels from closed sets only: a route's pattern, never its path, and any made-up method is `other`
    // (docs/limits.md, "What an anonymous request can grow")
    const route = unmatched ? "unmatched" : routePath;
    const method = methodLabel(c.req.method);
    nameRequestSpan(method, route);
    metrics.httpRequests.inc({ method, route, status: statusLabel(status) });
    metrics.httpDuration.observe({ method, route }, seconds);
    log.info("request", {
      request_id: requestId,
      method: c.req.method,
      path: c.req.path,
      status,
      duration_ms: Math.round(seconds * 10_000) / 10,
      // what the 401's WWW-Authenticate said (routes/policy/auth.ts); absent from any other line
      auth_failure: status === 401 ? c.get("authFailure") : undefined,
    });
  };
}
