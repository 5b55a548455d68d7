/** `newRouter`, the router every route file starts from, so that no route has its own path for validation errors. */

import { OpenAPIHono } from "@hono/zod-openapi";
import { type AppEnv, validationHook } from "./validation.ts";

export type { AppEnv };

/** A router whose request validation failures become ApiErrors (one error path for the whole API). */
export function newRouter() {
  return new OpenAPIHono<AppEnv>({ defaultHook: validationHook });
}
