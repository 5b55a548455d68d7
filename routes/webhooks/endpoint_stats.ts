/**
 * An endpoint's health (`GET .../endpoints/{id}/stats`). Apart from endpoints.ts because its read costs Postgres more
 * than most requests, so it runs under its own cap of reads at once, per company and per instance.
 */

import { createRoute, z } from "@hono/zod-openapi";
import { endpointStats } from "../../domain/webhooks/endpoints/stats.ts";
import { filterErrorsOf } from "../../domain/webhooks/outbox/filter_errors.ts";
import { throttleOf } from "../../domain/webhooks/endpoints/throttle.ts";
import type { Deps } from "../../domain/infra/deps.ts";
import { newRouter } from "../openapi/router.ts";
import { capConcurrency } from "../policy/concurrency_cap.ts";
import { errorResponses, IdParam, jsonResponse } from "../openapi/schemas.ts";
import { EndpointStats, EndpointStatsQuery } from "./schemas.ts";

const stats = createRoute({
  operationId: "getWebhookEndpointStats",
  method: "get",
  path: "/api/v2/notifications/endpoints/{id}/stats",
  tags: ["Webhook endpoints"],
  summary: "The endpoint's health since an instant: attempts by outcome, success rate, p50/p95 duration, its " +
    "last success and failure, its filter's errors, and its throttle and backlog",
  request: { params: IdParam, query: EndpointStatsQuery },
  responses: { 200: jsonResponse("The endpoint's stats", z.object({ data: EndpointStats })), ...errorResponses },
});

export function webhookEndpointStatsRoutes({ sql, config }: Deps) {
  const router = newRouter();
  // a month's read costs Postgres more than most requests: a company's reads cannot take every connection
  router.use(
    "/api/v2/notifications/endpoints/:id/stats",
    capConcurrency({
      perCompany: config.limits.statsReadsPerCompany,
      perInstance: config.limits.statsReadsPerInstance,
    }),
  );
  return router.openapi(stats, async (c) => {
    const { since } = c.req.valid("query");
    const data = await endpointStats(sql, c.get("companyId"), c.req.valid("param").id, since?.at);
    // after the stats, which answer 404 for an endpoint of another company
    const filterErrors = await filterErrorsOf(sql, c.get("companyId"), data.endpoint_id);
    const throttle = await throttleOf(sql, c.get("companyId"), data.endpoint_id);
    return c.json({ data: { ...data, filter_errors: filterErrors, throttle } }, 200);
  });
}
