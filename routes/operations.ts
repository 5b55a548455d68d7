/**
 * The operator's routes, outside `/api` and without a company token: liveness, readiness and Prometheus metrics.
 */

import { createRoute, z } from "@hono/zod-openapi";
import type { Sql } from "../domain/infra/db.ts";
import type { Deps } from "../domain/infra/deps.ts";
import { newRouter } from "./openapi/router.ts";
import { gauge, renderMetrics } from "../domain/infra/metrics.ts";
import { unauthorized } from "../domain/basics/errors.ts";
import { bearerMatches } from "../domain/integrators/tokens.ts";
import { VERSION } from "../domain/infra/version.ts";
import { ErrorBody, jsonResponse, requestIdHeader, serverErrorResponses } from "./openapi/schemas.ts";

const Health = z.object({ status: z.string() }).openapi("Health");
const Readiness = z.object({
  status: z.string().openapi({
    description: "`ready`, `not_ready`, or `draining` from SIGTERM until the process exits",
  }),
  database: z.string(),
  worker: z.string(),
  version: z.string().openapi({ description: "The release this instance runs (CHANGELOG.md)", example: VERSION }),
}).openapi("Readiness");

const healthz = createRoute({
  method: "get",
  path: "/healthz",
  operationId: "getHealth",
  tags: ["Operations"],
  security: [], // no bearer token needed
  summary: "Liveness: the process serves and the database answers",
  responses: {
    200: jsonResponse("Healthy", Health),
    500: serverErrorResponses[500],
    503: jsonResponse(
      "Database unreachable, or the instance is busy (an error body with `Retry-After`)",
      z.union([Health, ErrorBody]),
    ),
  },
});

const readyz = createRoute({
  method: "get",
  path: "/readyz",
  operationId: "getReadiness",
  tags: ["Operations"],
  security: [], // no bearer token needed
  summary: "Readiness: the database answers, the worker runs (or is off by configuration) and no SIGTERM came",
  responses: {
    200: jsonResponse("Ready", Readiness),
    ...serverErrorResponses,
    503: jsonResponse(
      "Not ready, or the instance is busy (an error body with `Retry-After`)",
      z.union([Readiness, ErrorBody]),
    ),
  },
});

const metricsRoute = createRoute({
  method: "get",
  path: "/metrics",
  operationId: "getMetrics",
  tags: ["Operations"],
  security: [], // not a company token: METRICS_TOKEN, when it is set
  summary: "Prometheus metrics: HTTP requests, webhook deliveries, queue depth",
  description: "With METRICS_TOKEN set, answers only `Authorization: Bearer <METRICS_TOKEN>` (401 otherwise).",
  responses: {
    200: {
      description: "Prometheus text format",
      headers: requestIdHeader,
      content: { "text/plain": { schema: z.string() } },
    },
    401: jsonResponse("METRICS_TOKEN is set and the request does not carry it", ErrorBody),
    ...serverErrorResponses,
  },
});

/** Jobs waiting in graphile-worker, by task: the delivery backlog an operator watches. */
async function queueDepth(sql: Sql) {
  const rows = await sql<{ task: string; ready: string; scheduled: string; locked: string }[]>`
    select task_identifier as task,
           count(*) filter (where locked_at is null and run_at <= now()) as ready,
           count(*) filter (where locked_at is null and run_at > now()) as scheduled,
           count(*) filter (where locked_at is not null) as locked
    from graphile_worker.jobs
    group by task_identifier`;
  return rows.flatMap((r) => [
    { labels: { task: r.task, state: "ready" }, value: Number(r.ready) },
    { labels: { task: r.task, state: "scheduled" }, value: Number(r.scheduled) },
    { labels: { task: r.task, state: "locked" }, value: Number(r.locked) },
  ]);
}

/**
 * Whether the database answers `select 1`. One check at a time: the health checks that arrive while it runs share its
 * answer, so a flood of them holds one connection, not one each (docs/limits.md, "What an anonymous request can grow").
 */
function databaseCheck(sql: Sql): () => Promise<boolean> {
  let running: Promise<boolean> | null = null;
  return () =>
    running ??= sql`select 1`.then(() => true, () => false).finally(() => {
      running = null;
    });
}

export function operationsRoutes({ sql, config, workerRunning, draining }: Deps) {
  const databaseAnswers = databaseCheck(sql);
  return newRouter()
    .openapi(healthz, async (c) => {
      return await databaseAnswers() ? c.json({ status: "ok" }, 200) : c.json({ status: "unavailable" }, 503);
    })
    .openapi(readyz, async (c) => {
      const database = await databaseAnswers() ? "ok" : "unavailable";
      const worker = !config.worker ? "off" : workerRunning?.() ? "running" : "stopped";
      if (draining?.()) return c.json({ status: "draining", database, worker, version: VERSION }, 503);
      const ready = database === "ok" && worker !== "stopped";
      return c.json({ status: ready ? "ready" : "not_ready", database, worker, version: VERSION }, ready ? 200 : 503);
    })
    .openapi(metricsRoute, async (c) => {
      if (config.metricsToken && !(await bearerMatches(c.req.header("authorization"), config.metricsToken))) {
        throw unauthorized();
      }
      const depth = await queueDepth(sql).catch(() => []);
      const body = renderMetrics([gauge("job_queue_depth", "graphile-worker jobs by task and state", depth)]);
      return c.text(body, 200, { "content-type": "text/plain; version=0.0.4; charset=utf-8" });
    });
}
