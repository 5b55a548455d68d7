/**
 * The whole HTTP API assembled (`createApp`): the middleware in the order every request meets it, the routes, the
 * OpenAPI document, 405 with `Allow`, and `onError`, the only place an error becomes an answer (docs/architecture.md,
 * "How a request travels").
 */

import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import { TokenGuard } from "../domain/integrators/token_guard.ts";
import { sharedRateLimiter } from "../domain/requests/rate_limits.ts";
import { requireCompany } from "./policy/auth.ts";
import { ApiError, methodNotAllowed, notFound } from "../domain/basics/errors.ts";
import { limitPerCompany } from "./policy/rate_limit.ts";
import type { Deps } from "../domain/infra/deps.ts";
import { newRouter } from "./openapi/router.ts";
import { securityHeaders } from "./policy/headers.ts";
import { limitInFlight } from "./policy/in_flight.ts";
import { warnUntrustedForwarding } from "./policy/client_address.ts";
import { readBody } from "./policy/read_body.ts";
import { documentIdempotencyKey, idempotentPosts } from "./policy/idempotency.ts";
import { secretBoxFor } from "../domain/infra/secret_box.ts";
import { allowedMethods } from "./policy/methods.ts";
import { log } from "../domain/basics/log.ts";
import { isDatabaseUnreachable } from "../domain/infra/db.ts";
import { operationsRoutes } from "./operations.ts";
import { docsRoutes } from "./docs.ts";
import { consoleRoutes } from "./console/console.ts";
import { methodLabel, metrics, statusLabel } from "../domain/infra/metrics.ts";
import { nameRequestSpan } from "../domain/infra/tracing.ts";
import { companyRoutes, peopleRoutes } from "./subjects/subjects.ts";
import { REQUEST_ID_HEADER } from "./openapi/schemas.ts";
import { API_DESCRIPTION, TAGS } from "./openapi/document.ts";
import { webhookEndpointRoutes } from "./webhooks/endpoints.ts";
import { webhookEndpointStatsRoutes } from "./webhooks/endpoint_stats.ts";
import { webhookEventRoutes } from "./webhooks/events.ts";
import { documentEventCatalogue, webhookEventTypeRoutes } from "./webhooks/event_types.ts";
import { bankAccountRoutes } from "./bank_accounts/bank_accounts.ts";
import { documentRoutes } from "./subjects/documents.ts";
import { sandboxRoutes } from "./sandbox/sandbox.ts";
import { transactionRoutes } from "./rails/transactions.ts";
import { wireRoutes } from "./rails/wires.ts";
import { paymentRoutes } from "./rails/payments.ts";
import { SIGN_IN_PATH, signInRoutes } from "./integrators/sign_in.ts";

export const MAX_BODY_BYTES = 22 * 1024 * 1024;
const REQUEST_ID_RE = /^[A-Za-z0-9._:\-]{1,128}$/;

/** The whole HTTP API, without a server: `main.ts` serves it and tests call `app.request`. */
export function createApp(deps: Deps) {
  const app = newRouter();
  const { limits } = deps.config;

  app.use("*", async (c, next) => {
    const started = performance.now();
    const given = c.req.header("x-request-id");
    const requestId = given && REQUEST_ID_RE.test(given) ? given : crypto.randomUUID();
    c.set("requestId", requestId);
    // set before the handler runs, so the answer is built with it: a header set after `next` makes Hono copy the
    // whole Response again (docs/performance.md, The path every request takes)
    c.header("x-request-id", requestId);
    await next();
    if (!c.res.headers.has("x-request-id")) c.header("x-request-id", requestId);
    const seconds = (performance.now() - started) / 1000;
    const unmatched = (c.res.status === 404 || c.res.status === 405) && c.req.routePath.endsWith("*");
    // labels from closed sets only: a route's pattern, never its path, and any made-up method is `other`
    // (docs/limits.md, "What an anonymous request can grow")
    const route = unmatched ? "unmatched" : c.req.routePath;
    const method = methodLabel(c.req.method);
    nameRequestSpan(method, route);
    metrics.httpRequests.inc({ method, route, status: statusLabel(c.res.status) });
    metrics.httpDuration.observe({ method, route }, seconds);
    log.info("request", {
      request_id: requestId,
      method: c.req.method,
      path: c.req.path,
      status: c.res.status,
      duration_ms: Math.round(seconds * 10_000) / 10,
    });
  });

  app.use("*", securityHeaders);
  app.use("*", warnUntrustedForwarding(deps.config.trustProxy));
  app.use("*", limitInFlight(deps.config.maxInflightRequests));
  // the token is checked before a byte of the body is read: an anonymous client cannot make us receive 22 MB
  // sign-in is how a token is obtained: it has no company yet, and its own throttle (routes/integrators/sign_in.ts)
  const guard = new TokenGuard(deps.sql);
  const authenticate = requireCompany(deps.config, guard);
  const limitApi = limitPerCompany(
    sharedRateLimiter(deps.sql, "api", { perSecond: limits.requestsPerSecond, burst: limits.requestBurst }),
  );
  // one closure, not hono/combine's `except`, which builds a router match and a composed chain on every request
  app.use("/api/*", async (c: Context, next) => {
    if (c.req.path === SIGN_IN_PATH) return await next();
    await authenticate(c, async () => void await limitApi(c, next));
  });
  if (deps.config.sandbox) {
    app.use(
      "/api/sandbox/*",
      limitPerCompany(
        sharedRateLimiter(deps.sql, "sandbox", { perSecond: limits.sandboxPerSecond, burst: limits.sandboxBurst }),
      ),
    );
  }
  let methodsOf: (path: string) => string[] = () => []; // set below, once every route is registered
  // a route (not middleware, whose method is ALL) matched this method and path: the router already knows
  const routed = (c: Context) => c.req.matchedRoutes.some((r) => r.method !== "ALL");
  app.use("*", readBody({ maxBytes: MAX_BODY_BYTES, timeoutMs: deps.config.bodyTimeoutMs, when: routed }));
  // after the token (the key is the company's) and the body read (a replay must be the same bytes)
  app.use("/api/*", idempotentPosts(deps.sql, { when: routed, box: () => secretBoxFor(deps.config) }));

  app.route("/", operationsRoutes(deps));
  app.route("/", docsRoutes());
  app.route("/", consoleRoutes());
  app.route("/", signInRoutes(deps, guard));
  app.route("/", peopleRoutes(deps));
  app.route("/", companyRoutes(deps));
  app.route("/", webhookEndpointRoutes(deps));
  app.route("/", webhookEndpointStatsRoutes(deps));
  app.route("/", webhookEventRoutes(deps));
  app.route("/", webhookEventTypeRoutes(deps));
  app.route("/", documentRoutes(deps));
  app.route("/", bankAccountRoutes(deps));
  app.route("/", transactionRoutes(deps));
  app.route("/", paymentRoutes(deps));
  app.route("/", wireRoutes(deps));
  if (deps.config.sandbox) app.route("/", sandboxRoutes(deps));

  app.openAPIRegistry.registerComponent("securitySchemes", "bearerAuth", {
    type: "http",
    scheme: "bearer",
    bearerFormat: "JWT",
    description: "HS256; `sub` your company id, `iss` and `aud` this service's (`payments-api` by default), " +
      "`iat` and `exp` at most JWT_MAX_TTL_SECONDS (30 days by default) apart.",
  });
  documentIdempotencyKey(app.openAPIRegistry);
  app.openAPIRegistry.registerComponent("headers", "RequestId", REQUEST_ID_HEADER);
  documentEventCatalogue(app.openAPIRegistry);
  app.doc31("/openapi.json", {
    openapi: "3.1.0",
    info: { title: "Payments integrator API", version: "1.0.0", description: API_DESCRIPTION },
    // relative: the document is served by the instance it describes, whatever host and port reach it
    servers: [{ url: "/", description: "This instance" }],
    tags: TAGS,
    security: [{ bearerAuth: [] }],
  });

  methodsOf = allowedMethods(app.routes);
  app.notFound((c) => {
    const allowed = methodsOf(c.req.path);
    throw allowed.length ? methodNotAllowed(allowed) : notFound();
  });
  app.onError((err, c) => {
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
  });

  return app;
}

export type App = ReturnType<typeof createApp>;
