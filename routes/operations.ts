import { createRoute, z } from "@hono/zod-openapi";
import type { Sql } from "../domain/platform/db.ts";
import type { Deps } from "../domain/platform/deps.ts";
import { newRouter } from "./platform/router.ts";
import { gauge, renderMetrics } from "../domain/platform/metrics.ts";
import { unauthorized } from "../domain/platform/errors.ts";
import { bearerMatches } from "../domain/platform/tokens.ts";

const Health = z.object({ status: z.string() }).openapi("Health");
const Readiness = z.object({ status: z.string(), database: z.string(), worker: z.string() }).openapi("Readiness");

const healthz = createRoute({
  method: "get",
  path: "/healthz",
  tags: ["Operations"],
  security: [], // no bearer token needed
  summary: "Liveness: the process serves and the database answers",
  responses: {
    200: { description: "Healthy", content: { "application/json": { schema: Health } } },
    503: { description: "Database unreachable", content: { "application/json": { schema: Health } } },
  },
});

const readyz = createRoute({
  method: "get",
  path: "/readyz",
  tags: ["Operations"],
  security: [], // no bearer token needed
  summary: "Readiness: the database answers and the worker runs (or is off by configuration)",
  responses: {
    200: { description: "Ready", content: { "application/json": { schema: Readiness } } },
    503: { description: "Not ready", content: { "application/json": { schema: Readiness } } },
  },
});

const metricsRoute = createRoute({
  method: "get",
  path: "/metrics",
  tags: ["Operations"],
  security: [], // not a company token: METRICS_TOKEN, when it is set
  summary: "Prometheus metrics: HTTP requests, webhook deliveries, queue depth",
  description: "With METRICS_TOKEN set, answers only `Authorization: Bearer <METRICS_TOKEN>` (401 otherwise).",
  responses: {
    200: { description: "Prometheus text format", content: { "text/plain": { schema: z.string() } } },
    401: { description: "METRICS_TOKEN is set and the request does not carry it" },
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

const databaseAnswers = (sql: Sql) => sql`select 1`.then(() => true, () => false);

export function operationsRoutes({ sql, config, workerRunning }: Deps) {
  return newRouter()
    .openapi(healthz, async (c) => {
      return await databaseAnswers(sql) ? c.json({ status: "ok" }, 200) : c.json({ status: "unavailable" }, 503);
    })
    .openapi(readyz, async (c) => {
      const database = await databaseAnswers(sql) ? "ok" : "unavailable";
      const worker = !config.worker ? "off" : workerRunning?.() ? "running" : "stopped";
      const ready = database === "ok" && worker !== "stopped";
      return c.json({ status: ready ? "ready" : "not_ready", database, worker }, ready ? 200 : 503);
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
