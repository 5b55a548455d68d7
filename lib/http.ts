import { OpenAPIHono } from "@hono/zod-openapi";
import type { Config } from "./config.ts";
import type { Sql } from "./db.ts";
import { validationHook } from "./validation.ts";

export type AppEnv = { Variables: { companyId: string; requestId: string } };

/** What routes need from the running service, handed in by `createApp`. */
export type Deps = {
  sql: Sql;
  config: Config;
  /** This process, as registered in `worker_processes`; webhook leases carry it so a crash frees them at once. */
  processId: string;
  workerRunning?: () => boolean;
};

/** A router whose request validation failures become ApiErrors (one error path for the whole API). */
export function newRouter() {
  return new OpenAPIHono<AppEnv>({ defaultHook: validationHook });
}
