/**
 * The whole HTTP API assembled (`createApp`): the middleware in the order every request meets it, the routes, the
 * OpenAPI document, 405 with `Allow`, and the error renderer (docs/architecture.md, "How a request travels").
 */

import type { Context } from "hono";
import { TokenGuard } from "../domain/integrators/token_guard.ts";
import { sharedRateLimiter } from "../domain/requests/rate_limits.ts";
import { requireCompany } from "./policy/auth.ts";
import { methodNotAllowed, notFound } from "../domain/basics/errors.ts";
import { limitPerCompany } from "./policy/rate_limit.ts";
import type { Deps } from "../domain/infra/deps.ts";
import { type AppEnv, newRouter } from "./openapi/router.ts";
import { securityHeaders } from "./policy/headers.ts";
import { limitInFlight } from "./policy/in_flight.ts";
import { warnUntrustedForwarding } from "./policy/client_address.ts";
import { readBody } from "./policy/read_body.ts";
import { documentIdempotencyKey, idempotentPosts } from "./policy/idempotency.ts";
import { logRequests } from "./policy/request_log.ts";
import { renderError } from "./policy/error_answer.ts";
import { secretBoxFor } from "../domain/infra/secret_box.ts";
import { allowedMethods } from "./policy/methods.ts";
import { operationsRoutes } from "./operations.ts";
import { docsRoutes } from "./docs.ts";
import { consoleRoutes } from "./console/console.ts";
import { companyRoutes, peopleRoutes } from "./subjects/subjects.ts";
import { REQUEST_ID_HEADER } from "./openapi/schemas.ts";
import { API_DESCRIPTION, TAGS } from "./openapi/document.ts";
import { webhookEndpointRoutes } from "./webhooks/endpoints.ts";
import { webhookEndpointStatsRoutes } from "./webhooks/endpoint_stats.ts";
import { webhookEventRoutes } from "./webhooks/events.ts";
import { documentEventCatalogue, webhookEventTypeRoutes } from "./webhooks/event_types.ts";
import { documentDestinations } from "./webhooks/schemas.ts";
import { webhookStreamRoutes } from "./webhooks/streams.ts";
import { bankAccountRoutes } from "./bank_accounts/bank_accounts.ts";
import { documentRoutes } from "./subjects/documents.ts";
import { sandboxRoutes } from "./sandbox/sandbox.ts";
import { transactionRoutes } from "./rails/transactions.ts";
import { wireRoutes } from "./rails/wires.ts";
import { paymentRoutes } from "./rails/payments.ts";
import { SIGN_IN_PATH, signInRoutes } from "./integrators/sign_in.ts";
import { PORTAL_SESSIONS_PATH, portalLinkRoutes } from "./webhooks/portal_links.ts";
import { portalPageRoutes } from "./console/portal.ts";
import { configureFilterTime } from "../domain/webhooks/outbox/filter_time.ts";
import { countDeferralsWith, countDeferred } from "../domain/webhooks/outbox/filter_deferrals.ts";

type Router = ReturnType<typeof newRouter>;

/** The whole HTTP API, without a server: `main.ts` serves it and tests call `app.request`. */
export function createApp(deps: Deps) {
  const app = newRouter();
  const { config, sql } = deps;
  const { limits } = config;
  // every filter evaluation of this process, by a request or the worker, draws on its company's filter time
  configureFilterTime({ perSecondMs: limits.filterTimePerSecondMs, burstMs: limits.filterTimeBurstMs });
  countDeferralsWith((companyId) => countDeferred(sql, companyId));

  // What every request takes first, in one layer of Hono's chain (each layer costs every request a dispatch and a
  // promise: docs/performance.md, "The path every request takes"): the id and the log line around the rest; the
  // security headers on the answer, an error's too; the forwarding warning; the in-flight bound
  const warnForwarding = warnUntrustedForwarding(config.trustProxy);
  const inFlight = limitInFlight(config.maxInflightRequests);
  app.use(
    "*",
    logRequests(async (c, next) => {
      await answeringErrors(c, () => {
        warnForwarding(c);
        return inFlight(c, next);
      });
      securityHeaders(c);
    }),
  );
  // the token is checked before a byte of the body is read: an anonymous client cannot make us receive 22 MB
  // sign-in is how a token is obtained: it has no company yet, and its own throttle (routes/integrators/sign_in.ts);
  // so is a portal link's exchange, whose code is the credential (routes/webhooks/portal_links.ts); neither carries
  // a file, so an anonymous body stops at 256 KiB (routes/policy/read_body.ts)
  const guard = new TokenGuard(sql);
  const authenticate = requireCompany(config, guard);
  const apiRate = sharedRateLimiter(sql, "api", { perSecond: limits.requestsPerSecond, burst: limits.requestBurst });
  const limitApi = limitPerCompany(apiRate);
  // one closure, not hono/combine's `except`, which builds a router match and a composed chain on every request
  app.use("/api/*", (c: Context, next) => {
    if (c.req.path === SIGN_IN_PATH || c.req.path === PORTAL_SESSIONS_PATH) return next();
    return authenticate(c, apiRate.enabled ? async () => void await limitApi(c, next) : next);
  });
  if (config.sandbox) {
    const sandboxRate = { perSecond: limits.sandboxPerSecond, burst: limits.sandboxBurst };
    app.use("/api/sandbox/*", limitPerCompany(sharedRateLimiter(sql, "sandbox", sandboxRate)));
  }
  // a route (not middleware, whose method is ALL) matched this method and path: the router already knows
  const routeOf = (c: Context) => c.req.matchedRoutes.find((r) => r.method !== "ALL");
  const routed = (c: Context) => routeOf(c) !== undefined;
  const read = readBody({ timeoutMs: config.bodyTimeoutMs, route: routeOf });
  // after the token (the key is the company's, so a request without one passes by) and the body read (a replay must
  // be the same bytes); one layer with the read
  const idempotent = idempotentPosts(sql, { when: routed, box: () => secretBoxFor(config) });
  app.use("*", (c: Context<AppEnv>, next) => read(c, () => idempotent(c, next)));

  mountRoutes(app, deps, guard);
  documentApi(app);
  answerUnroutedPaths(app); // once every route, the document's too, is registered
  app.onError(renderError);
  return app;
}

/**
 * Runs `steps` as a layer of Hono's chain runs its middleware: an error they throw becomes the answer (`renderError`),
 * so the steps after them in the same layer (headers, the log line) still see an answer.
 */
async function answeringErrors(c: Context, steps: () => Promise<unknown>) {
  try {
    await steps();
  } catch (err) {
    if (!(err instanceof Error)) throw err;
    c.error = err;
    c.res = await renderError(err, c as Context<AppEnv>);
  }
}

/** Every feature's routes, mounted at the root (each router carries its full paths). */
function mountRoutes(app: Router, deps: Deps, guard: TokenGuard) {
  app.route("/", operationsRoutes(deps));
  app.route("/", docsRoutes());
  app.route("/", consoleRoutes());
  app.route("/", portalPageRoutes(deps));
  app.route("/", signInRoutes(deps, guard));
  app.route("/", peopleRoutes(deps));
  app.route("/", companyRoutes(deps));
  app.route("/", webhookEndpointRoutes(deps));
  app.route("/", webhookEndpointStatsRoutes(deps));
  app.route("/", webhookEventRoutes(deps));
  app.route("/", webhookEventTypeRoutes(deps));
  app.route("/", webhookStreamRoutes(deps));
  app.route("/", portalLinkRoutes(deps));
  app.route("/", documentRoutes(deps));
  app.route("/", bankAccountRoutes(deps));
  app.route("/", transactionRoutes(deps));
  app.route("/", paymentRoutes(deps));
  app.route("/", wireRoutes(deps));
  if (deps.config.sandbox) app.route("/", sandboxRoutes(deps));
}

/** The OpenAPI document at `/openapi.json`: the routes' own schemas, and what no single route declares. */
function documentApi(app: Router) {
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
  documentDestinations(app.openAPIRegistry);
  app.doc31("/openapi.json", {
    openapi: "3.1.0",
    info: { title: "Payments integrator API", version: "1.0.0", description: API_DESCRIPTION },
    // relative: the document is served by the instance it describes, whatever host and port reach it
    servers: [{ url: "/", description: "This instance" }],
    tags: TAGS,
    security: [{ bearerAuth: [] }],
  });
}

/** A path no route matched: 405 with `Allow` when another method of it is routed, 404 otherwise. */
function answerUnroutedPaths(app: Router) {
  const methodsOf = allowedMethods(app.routes);
  app.notFound((c) => {
    const allowed = methodsOf(c.req.path);
    throw allowed.length ? methodNotAllowed(allowed) : notFound();
  });
}

export type App = ReturnType<typeof createApp>;
