/** The webhook events of a company: the list, one record with its attempts, acknowledge, and retry by hand. */

import { createRoute, z } from "@hono/zod-openapi";
import {
  acknowledgeDelivery,
  getDelivery,
  listDeliveries,
  presentDelivery,
  retryDelivery,
} from "../../domain/webhooks/endpoints/deliveries.ts";
import type { Deps } from "../../domain/infra/deps.ts";
import { secretBoxFor } from "../../domain/infra/secret_box.ts";
import { sentRequest } from "../../domain/webhooks/engine/sent_request.ts";
import { newRouter } from "../openapi/router.ts";
import { bodyErrorResponses, errorResponses, IdParam, jsonResponse } from "../openapi/schemas.ts";
import { Delivery, EventsQuery } from "./schemas.ts";

const tags = ["Webhook events"];
const base = "/api/v2/notifications/events";

const list = createRoute({
  operationId: "listWebhookEvents",
  method: "get",
  path: base,
  tags,
  summary: "Delivery records, newest first by default, with filters and a last_id cursor",
  request: { query: EventsQuery },
  responses: {
    200: jsonResponse("A page of delivery records", z.object({ data: z.array(Delivery) })),
    ...errorResponses,
  },
});

const show = createRoute({
  operationId: "getWebhookEvent",
  method: "get",
  path: `${base}/{id}`,
  tags,
  summary: "A delivery record with its attempts",
  request: { params: IdParam },
  responses: { 200: jsonResponse("The delivery record", z.object({ data: Delivery })), ...errorResponses },
});

const acknowledge = createRoute({
  operationId: "acknowledgeWebhookEvent",
  method: "put",
  path: `${base}/{id}/acknowledge`,
  tags,
  summary: "Mark the event processed: status succeeded, nothing more is attempted",
  request: { params: IdParam },
  responses: {
    200: jsonResponse(
      "Acknowledged",
      z.object({ data: z.object({ id: z.string(), status: z.literal("succeeded") }) }),
    ),
    ...bodyErrorResponses,
  },
});

const retry = createRoute({
  operationId: "retryWebhookEvent",
  method: "post",
  path: `${base}/{id}/retry`,
  tags,
  summary: "Attempt again now, with a fresh schedule of 10 attempts (422 once succeeded)",
  request: { params: IdParam },
  responses: {
    200: jsonResponse("Retry enqueued", z.object({ message: z.literal("retry enqueued") })),
    ...bodyErrorResponses,
  },
});

export function webhookEventRoutes({ sql, config }: Deps) {
  return newRouter()
    .openapi(list, async (c) => {
      const rows = await listDeliveries(sql, c.get("companyId"), c.req.valid("query"));
      return c.json({ data: rows.map((d) => presentDelivery(d)) }, 200);
    })
    .openapi(show, async (c) => {
      const { delivery, attempts } = await getDelivery(sql, c.get("companyId"), c.req.valid("param").id);
      const request = await sentRequest(sql, await secretBoxFor(config), c.get("companyId"), delivery);
      return c.json({ data: { ...presentDelivery(delivery, attempts), request } }, 200);
    })
    .openapi(acknowledge, async (c) => {
      const result = await acknowledgeDelivery(sql, c.get("companyId"), c.req.valid("param").id);
      return c.json({ data: result }, 200);
    })
    .openapi(retry, async (c) => {
      await retryDelivery(sql, c.get("companyId"), c.req.valid("param").id);
      return c.json({ message: "retry enqueued" as const }, 200);
    });
}
