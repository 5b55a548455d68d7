/**
 * The catalogue of webhook event types: the route that lists it, and `documentEventCatalogue`, which writes it into the
 * OpenAPI document's `webhooks` so a reader of `/docs` sees every body a receiver gets.
 */

import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import { CATALOGUE } from "../../domain/webhooks/outbox/catalogue.ts";
import type { Deps } from "../../domain/infra/deps.ts";
import { newRouter } from "../openapi/router.ts";
import { errorResponses, jsonResponse } from "../openapi/schemas.ts";
import { EventTypeEntry, PayloadVersionEntry } from "./schemas.ts";
import { VERSIONED_CATALOGUE } from "../../domain/webhooks/outbox/payload_versions.ts";

const list = createRoute({
  operationId: "listWebhookEventTypes",
  method: "get",
  path: "/api/v2/notifications/event_types",
  tags: ["Webhook events"],
  summary: "Every event type: what it means and the JSON Schema of its body, in every payload version",
  responses: {
    200: jsonResponse(
      "The event catalogue; `versions` lists the payload versions, oldest first (docs/webhooks.md, Payload versions)",
      z.object({ data: z.array(EventTypeEntry), versions: z.array(PayloadVersionEntry) }),
    ),
    ...errorResponses,
  },
});

export function webhookEventTypeRoutes(_deps: Deps) {
  const data = CATALOGUE.map(({ type, description, schema }) => ({ type, description, schema }));
  return newRouter().openapi(list, (c) => c.json({ data, versions: [...VERSIONED_CATALOGUE] }, 200));
}

const SIGNATURE_HEADERS = z.object({
  "service-signature": z.string().openapi({
    description: '`t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">` (and `,v0=<hex>` with the ' +
      "previous secret for 24 hours after a rotation)",
    example: "t=1763708400,v1=5257a869e7ecebeda32affa62cdca3fa51cad7e77a0e56ff536d0ce8e108d8bd",
  }),
  "webhook-id": z.string().openapi({
    description: "Standard Webhooks: the delivery record id, the same on every attempt (de-duplicate on it)",
    example: "01a2090f-c78e-77e3-aced-f4defcf15951",
  }),
  "webhook-timestamp": z.string().openapi({
    description: "Standard Webhooks: unix seconds, the same as `t=` of `service-signature`",
    example: "1763708400",
  }),
  "webhook-signature": z.string().openapi({
    description:
      'Standard Webhooks: `v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<raw body>">` keyed ' +
      "with the secret's text, one per secret still signing, space-separated; verifies with the `standardwebhooks` " +
      'package as `new Webhook(secret, {format: "raw"})`',
    example: "v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=",
  }),
  traceparent: z.string().regex(/^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/).optional().openapi({
    description: "W3C Trace Context, only when the service runs with tracing on: the trace id is that of the API " +
      "request that caused the event, the same on every attempt; not signed (docs/webhooks.md, Tracing)",
    example: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
  }),
});

/**
 * The OpenAPI `webhooks` section: one entry per event type, with the catalogue's schema and example, so a reader of
 * `/docs` and a client generator see the bodies a receiver gets.
 */
export function documentEventCatalogue(registry: OpenAPIHono["openAPIRegistry"]) {
  for (const entry of CATALOGUE) {
    registry.registerWebhook({
      method: "post",
      path: entry.type,
      operationId: `${entry.type.replace(/_(\w)/g, (_, c: string) => c.toUpperCase())}Webhook`,
      tags: ["Webhook events"],
      summary: entry.description,
      request: {
        headers: SIGNATURE_HEADERS,
        body: { required: true, content: { "application/json": { schema: entry.schema, example: entry.example } } },
      },
      responses: {
        200: { description: "Any 2xx within the timeout acknowledges the delivery" },
        400: { description: "Any other status, a redirect or no answer in time: the delivery is retried" },
      },
    });
  }
}
