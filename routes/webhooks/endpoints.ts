/**
 * The webhook endpoint routes: create, show, list, update, disable, enable, rotate the signing secret, recover
 * failed deliveries and send a test event. An endpoint's stats have a file of their own (endpoint_stats.ts).
 */

import { createRoute, z } from "@hono/zod-openapi";
import {
  createEndpoint,
  disableAllEndpoints,
  disableEndpoint,
  enableEndpoint,
  getEndpoint,
  listEndpoints,
  presentEndpoint,
  presentRotation,
  rotateSecret,
  updateEndpoint,
  validateEndpointInput,
} from "../../domain/webhooks/endpoints/endpoints.ts";
import { presentDelivery, recoverDeliveries, sendTestEvent } from "../../domain/webhooks/endpoints/deliveries.ts";
import type { MiddlewareHandler } from "hono";
import type { Deps } from "../../domain/infra/deps.ts";
import { secretBoxFor } from "../../domain/infra/secret_box.ts";
import { newRouter } from "../openapi/router.ts";
import { alsoCheck } from "../openapi/validation.ts";
import { emptyBodyAsObject } from "../policy/optional_body.ts";
import {
  bodyErrorResponses,
  errorResponses,
  IdParam,
  jsonBody,
  jsonResponse,
  recoverRunningResponse,
  urlTakenResponse,
} from "../openapi/schemas.ts";
import {
  Delivery,
  Endpoint,
  ENDPOINT_CREATE_EXAMPLE,
  ENDPOINT_UPDATE_EXAMPLE,
  EndpointCreateBody,
  EndpointUpdateBody,
  RECOVER_EXAMPLE,
  RecoverBody,
  RecoverResult,
  RotatedSecret,
  TEST_EVENT_EXAMPLE,
  TestEventBody,
} from "./schemas.ts";

const tags = ["Webhook endpoints"];
const base = "/api/v2/notifications/endpoints";
const EndpointEnvelope = z.object({ data: Endpoint });

/** Answers here carry signing secrets: no cache, browser or shared, may keep them. */
const noStore: MiddlewareHandler = async (c, next) => {
  await next();
  c.header("Cache-Control", "no-store");
};

const create = createRoute({
  operationId: "createWebhookEndpoint",
  method: "post",
  path: base,
  tags,
  summary: "Create a webhook endpoint; the response carries its signing secret",
  request: { body: jsonBody(EndpointCreateBody, ENDPOINT_CREATE_EXAMPLE) },
  responses: { 201: jsonResponse("Endpoint created", EndpointEnvelope), ...bodyErrorResponses, ...urlTakenResponse },
});

const list = createRoute({
  operationId: "listWebhookEndpoints",
  method: "get",
  path: base,
  tags,
  summary: "Every endpoint of the account, oldest first, disabled ones included",
  responses: { 200: jsonResponse("Endpoints", z.object({ data: z.array(Endpoint) })), ...errorResponses },
});

const show = createRoute({
  operationId: "getWebhookEndpoint",
  method: "get",
  path: `${base}/{id}`,
  tags,
  summary: "Show an endpoint, secret included",
  request: { params: IdParam },
  responses: { 200: jsonResponse("The endpoint", EndpointEnvelope), ...errorResponses },
});

const update = createRoute({
  operationId: "updateWebhookEndpoint",
  method: "put",
  path: `${base}/{id}`,
  tags,
  summary: "Update an endpoint; omitted fields are left unchanged, but a url moved to another origin needs the " +
    "endpoint's secrets again",
  request: { params: IdParam, body: jsonBody(EndpointUpdateBody, ENDPOINT_UPDATE_EXAMPLE) },
  responses: { 200: jsonResponse("Endpoint updated", EndpointEnvelope), ...bodyErrorResponses, ...urlTakenResponse },
});

const disableOne = createRoute({
  operationId: "disableWebhookEndpoint",
  method: "delete",
  path: `${base}/{id}`,
  tags,
  summary: "Disable an endpoint (soft delete); what is still pending for it is marked failed",
  request: { params: IdParam },
  responses: {
    200: jsonResponse(
      "Endpoint disabled",
      z.object({ data: z.object({ id: z.string(), status: z.literal("disabled") }) }),
    ),
    ...errorResponses,
  },
});

const disableAll = createRoute({
  operationId: "disableAllWebhookEndpoints",
  method: "delete",
  path: base,
  tags,
  summary: "Disable every endpoint of the account",
  responses: { 200: jsonResponse("All endpoints disabled", z.object({ data: z.literal("ok") })), ...errorResponses },
});

const rotate = createRoute({
  operationId: "rotateWebhookEndpointSecret",
  method: "post",
  path: `${base}/{id}/rotate_secret`,
  tags,
  summary: "New signing secret (ed25519: a new key pair); each one rotated away still signs and verifies for 24 hours",
  request: { params: IdParam },
  responses: { 200: jsonResponse("Secret rotated", z.object({ data: RotatedSecret })), ...bodyErrorResponses },
});

const enable = createRoute({
  operationId: "enableWebhookEndpoint",
  method: "post",
  path: `${base}/{id}/enable`,
  tags,
  summary: "Enable a disabled endpoint again (within the account's endpoint quota); failed records stay failed",
  request: { params: IdParam },
  responses: { 200: jsonResponse("Endpoint enabled", EndpointEnvelope), ...bodyErrorResponses, ...urlTakenResponse },
});

const recover = createRoute({
  operationId: "recoverWebhookEndpoint",
  method: "post",
  path: `${base}/{id}/recover`,
  tags,
  summary: "Retry every failed record of the endpoint inserted in [since, until), in event order, each with a " +
    "fresh schedule; with include_skipped, also send the events it missed while disabled",
  // a request without a body is one without `since`: it hears that (400), not that its JSON is malformed
  middleware: [emptyBodyAsObject] as const,
  request: { params: IdParam, body: jsonBody(RecoverBody, RECOVER_EXAMPLE) },
  responses: {
    202: jsonResponse("Records re-queued", z.object({ data: RecoverResult })),
    ...bodyErrorResponses,
    ...recoverRunningResponse,
  },
});

const sendTest = createRoute({
  operationId: "sendWebhookTestEvent",
  method: "post",
  path: `${base}/{id}/test`,
  tags,
  summary: "Send the catalogue's example event of a type to this endpoint alone, delivered and listed like any event",
  middleware: [emptyBodyAsObject] as const,
  request: { params: IdParam, body: jsonBody(TestEventBody, TEST_EVENT_EXAMPLE) },
  responses: {
    202: jsonResponse("Test event stored and queued", z.object({ data: Delivery })),
    ...bodyErrorResponses,
  },
});

export function webhookEndpointRoutes({ sql, config }: Deps) {
  const box = () => secretBoxFor(config);
  const opts = {
    allowPrivateUrls: config.allowPrivateUrls,
    quota: { endpoints: config.limits.endpointsPerCompany, concurrency: config.limits.concurrencyPerCompany },
  };
  // the URL rule depends on configuration, so it lives in the domain; a body refused for its shape hears of it too
  const urlRule = <S extends typeof EndpointCreateBody | typeof EndpointUpdateBody>(schema: S) =>
    alsoCheck(schema, (body) => validateEndpointInput(body, { ...opts, creating: schema === EndpointCreateBody }));
  const router = newRouter();
  // A path, not "*": the router is mounted at "/", where "*" would reach every route of the app.
  router.use(base, noStore);
  router.use(`${base}/*`, noStore);
  return router
    .openapi(create, async (c) => {
      const b = await box();
      const endpoint = await createEndpoint(sql, c.get("companyId"), c.req.valid("json"), { ...opts, box: b });
      return c.json({ data: await presentEndpoint(b, endpoint) }, 201);
    }, urlRule(EndpointCreateBody))
    .openapi(list, async (c) => {
      const endpoints = await listEndpoints(sql, c.get("companyId"));
      const b = await box();
      return c.json({ data: await Promise.all(endpoints.map((e) => presentEndpoint(b, e))) }, 200);
    })
    .openapi(show, async (c) => {
      const endpoint = await getEndpoint(sql, c.get("companyId"), c.req.valid("param").id);
      return c.json({ data: await presentEndpoint(await box(), endpoint) }, 200);
    })
    .openapi(update, async (c) => {
      const { id } = c.req.valid("param");
      const b = await box();
      const endpoint = await updateEndpoint(sql, c.get("companyId"), id, c.req.valid("json"), { ...opts, box: b });
      return c.json({ data: await presentEndpoint(b, endpoint) }, 200);
    }, urlRule(EndpointUpdateBody))
    .openapi(disableOne, async (c) => {
      const endpoint = await disableEndpoint(sql, c.get("companyId"), c.req.valid("param").id);
      return c.json({ data: { id: endpoint.id, status: "disabled" as const } }, 200);
    })
    .openapi(disableAll, async (c) => {
      await disableAllEndpoints(sql, c.get("companyId"));
      return c.json({ data: "ok" as const }, 200);
    })
    .openapi(rotate, async (c) => {
      const b = await box();
      const endpoint = await rotateSecret(sql, b, c.get("companyId"), c.req.valid("param").id);
      return c.json({ data: await presentRotation(b, endpoint) }, 200);
    })
    .openapi(enable, async (c) => {
      const endpoint = await enableEndpoint(sql, c.get("companyId"), c.req.valid("param").id, opts);
      return c.json({ data: await presentEndpoint(await box(), endpoint) }, 200);
    })
    .openapi(recover, async (c) => {
      const { since, until, include_skipped, skipped_after } = c.req.valid("json");
      const range = { since: since.at, until: until?.at };
      const result = await recoverDeliveries(sql, c.get("companyId"), c.req.valid("param").id, range, {
        includeSkipped: include_skipped ?? false,
        skippedAfter: skipped_after,
        retentionDays: config.eventRetentionDays,
        scanEvents: config.limits.recoverScanEvents,
      });
      return c.json({ data: result }, 202);
    })
    .openapi(sendTest, async (c) => {
      const { type } = c.req.valid("json");
      const row = await sendTestEvent(sql, c.get("companyId"), c.req.valid("param").id, type ?? undefined);
      return c.json({ data: presentDelivery(row) }, 202);
    });
}
