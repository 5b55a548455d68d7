/**
 * `newRouter`, the router every route file starts from, so that no route has its own path for validation errors, and
 * whose routes without a body check their path and query in the handler's own call (`checkedInHandler`).
 */

import { OpenAPIHono } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { z } from "zod";
import { type AppEnv, validationHook } from "./validation.ts";

export type { AppEnv };

type Router = OpenAPIHono<AppEnv>;
type Route = Parameters<Router["openapi"]>[0];
type Handler = (c: Context<AppEnv>) => unknown;

/** A router whose request validation failures become ApiErrors (one error path for the whole API). */
export function newRouter() {
  const router = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });
  const openapi = router.openapi;
  router.openapi = ((route: Route, handler: Handler, hook?: unknown) => {
    const checked = hook === undefined ? checkedInHandler(route, handler) : null;
    if (!checked) return (openapi as (...args: unknown[]) => Router)(route, handler, hook);
    // documented as declared, its path and query included; mounted without their validators
    const { middleware: _middleware, hide, ...documented } = route;
    if (!hide) router.openAPIRegistry.registerPath(documented);
    return (openapi as (...args: unknown[]) => Router)({ ...route, hide: true, request: {} }, checked);
  }) as Router["openapi"];
  return router;
}

/**
 * A route whose request is only a path and a query (a GET by id, a list), without a hook of its own: the same schemas
 * and the same `validationHook` as @hono/zod-openapi's validators, parsed synchronously in the handler's call. Its
 * validators are a layer of the chain each, with an async parse and four awaits, a tenth of a GET person's CPU
 * (docs/performance.md). Query first, then path, as the validators ran. Null for any other route, which keeps them.
 */
function checkedInHandler(route: Route, handler: Handler): Handler | null {
  const { params, query, ...rest } = route.request ?? {};
  if ((!params && !query) || Object.values(rest).some((part) => part !== undefined)) return null;
  return (c) => {
    if (query) c.req.addValidatedData("query", parsed(query as z.ZodType, "query", queryValues(c)));
    if (params) c.req.addValidatedData("param", parsed(params as z.ZodType, "param", c.req.param()));
    return handler(c);
  };
}

/** What `schema` makes of `value`; a failure thrown as the ApiError the validators' hook would have thrown. */
function parsed(schema: z.ZodType, target: "query" | "param", value: unknown): object {
  const result = schema.safeParse(value);
  validationHook({ ...result, target });
  return result.data as object;
}

/** The query as @hono/zod-validator hands it to its schema: a repeated parameter as an array, any other as a string. */
function queryValues(c: Context): Record<string, string | string[]> {
  const values: Record<string, string | string[]> = {};
  for (const [key, all] of Object.entries(c.req.queries())) values[key] = all.length === 1 ? all[0] : all;
  return values;
}
