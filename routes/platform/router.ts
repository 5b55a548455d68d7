import { OpenAPIHono } from "@hono/zod-openapi";
import { validationHook } from "./validation.ts";

export type AppEnv = { Variables: { companyId: string; requestId: string } };

/** A router whose request validation failures become ApiErrors (one error path for the whole API). */
export function newRouter() {
  return new OpenAPIHono<AppEnv>({ defaultHook: validationHook });
}
