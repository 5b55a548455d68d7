/**
 * Sandbox routes for test clocks (docs/sandbox.md, "Test clocks"): create, list, show, advance and delete a clock of
 * the company. Subscriptions and PIX charges are put on a clock by their own creation routes (`test_clock_id`,
 * subscriptions.ts and payments.ts).
 */

import { createRoute, z } from "@hono/zod-openapi";
import {
  advanceTestClock,
  createTestClock,
  deleteTestClock,
  getTestClock,
  listTestClocks,
  presentTestClock,
} from "../../domain/rails/test_clocks.ts";
import type { Deps } from "../../domain/infra/deps.ts";
import { newRouter } from "../openapi/router.ts";
import { emptyBodyAsObject } from "../policy/optional_body.ts";
import { bodyErrorResponses, errorResponses, IdParam, jsonBody, jsonResponse } from "../openapi/schemas.ts";
import {
  AdvanceTestClockBody,
  TEST_CLOCK_EXAMPLES,
  TestClock,
  TestClockAdvanced,
  TestClockBody,
} from "./test_clock_schemas.ts";

const tags = ["Sandbox"];
const base = "/api/sandbox/test_clocks";
const ClockEnvelope = z.object({ data: TestClock });

const create = createRoute({
  operationId: "createSandboxTestClock",
  method: "post",
  path: base,
  tags,
  summary: "A test clock, frozen at frozen_time (default now), for subscriptions and PIX charges created on it",
  middleware: [emptyBodyAsObject] as const,
  request: { body: { ...jsonBody(TestClockBody, TEST_CLOCK_EXAMPLES.create), required: false } },
  responses: { 201: jsonResponse("The clock", ClockEnvelope), ...bodyErrorResponses },
});

const list = createRoute({
  operationId: "listSandboxTestClocks",
  method: "get",
  path: base,
  tags,
  summary: "Every test clock of the company, oldest first",
  responses: { 200: jsonResponse("The clocks", z.object({ data: z.array(TestClock) })), ...errorResponses },
});

const show = createRoute({
  operationId: "getSandboxTestClock",
  method: "get",
  path: `${base}/{id}`,
  tags,
  summary: "A test clock, its subscriptions and PIX charges, and when each next has a step",
  request: { params: IdParam },
  responses: { 200: jsonResponse("The clock", ClockEnvelope), ...errorResponses },
});

const advance = createRoute({
  operationId: "advanceSandboxTestClock",
  method: "post",
  path: `${base}/{id}/advance`,
  tags,
  summary: "Move the clock forward: every step falling due on the way runs now, in time order, with its events",
  request: { params: IdParam, body: jsonBody(AdvanceTestClockBody, TEST_CLOCK_EXAMPLES.advance) },
  responses: {
    201: jsonResponse("The clock at its new time, and the steps taken", z.object({ data: TestClockAdvanced })),
    ...bodyErrorResponses,
  },
});

const remove = createRoute({
  operationId: "deleteSandboxTestClock",
  method: "delete",
  path: `${base}/{id}`,
  tags,
  summary: "Delete the clock; what was on it stays, no longer moved by time",
  request: { params: IdParam },
  responses: {
    200: jsonResponse(
      "The clock is deleted",
      z.object({ data: z.object({ id: z.string().uuid(), deleted: z.literal(true) }) }),
    ),
    ...errorResponses,
  },
});

export function sandboxTestClockRoutes({ sql }: Deps) {
  return newRouter()
    .openapi(create, async (c) => {
      const input = c.req.valid("json") ?? {};
      const clock = await sql.begin((tx) => createTestClock(tx, c.get("companyId"), input));
      return c.json({ data: presentTestClock(clock, { subscriptions: [], charges: [] }) }, 201);
    })
    .openapi(list, async (c) => {
      const clocks = await listTestClocks(sql, c.get("companyId"));
      return c.json({ data: clocks.map((x) => presentTestClock(x.clock, x.contents)) }, 200);
    })
    .openapi(show, async (c) => {
      const { clock, contents } = await getTestClock(sql, c.get("companyId"), c.req.valid("param").id);
      return c.json({ data: presentTestClock(clock, contents) }, 200);
    })
    .openapi(advance, async (c) => {
      const { id } = c.req.valid("param");
      const { frozen_time } = c.req.valid("json");
      const { clock, contents, steps } = await sql.begin((tx) =>
        advanceTestClock(tx, c.get("companyId"), id, frozen_time)
      );
      return c.json({ data: { ...presentTestClock(clock, contents), steps } }, 201);
    })
    .openapi(remove, async (c) => {
      const { id } = c.req.valid("param");
      const deleted = await sql.begin((tx) => deleteTestClock(tx, c.get("companyId"), id));
      return c.json({ data: deleted }, 200);
    });
}
