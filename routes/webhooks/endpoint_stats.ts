import { createRoute, z } from "@hono/zod-openapi";
import { endpointStats } from "../../domain/webhooks/endpoint_stats.ts";
import { filterErrorsOf } from "../../domain/webhooks/filter_errors.ts";
import type { Deps } from "../../domain/infra/deps.ts";
import { newRouter } from "../openapi/router.ts";
import { errorResponses, IdParam, jsonResponse } from "../openapi/schemas.ts";
import { EndpointStats, EndpointStatsQuery } from "./schemas.ts";

const stats = createRoute({
  operationId: "getWebhookEndpointStats",
  method: "get",
  path: "/api/v2/notifications/endpoints/{id}/stats",
  tags: ["Webhook endpoints"],
  summary: "The endpoint's health since an instant: attempts by outcome, success rate, p50/p95 duration, its " +
    "last success and failure, and its filter's errors",
  request: { params: IdParam, query: EndpointStatsQuery },
  responses: { 200: jsonResponse("The endpoint's stats", z.object({ data: EndpointStats })), ...errorResponses },
});

export function webhookEndpointStatsRoutes({ sql }: Deps) {
  return newRouter().openapi(stats, async (c) => {
    const { since } = c.req.valid("query");
    const data = await endpointStats(sql, c.get("companyId"), c.req.valid("param").id, since?.at);
    // after the stats, which answer 404 for an endpoint of another company
    const filterErrors = await filterErrorsOf(sql, c.get("companyId"), data.endpoint_id);
    return c.json({ data: { ...data, filter_errors: filterErrors } }, 200);
  });
}
