import { createRoute, z } from "@hono/zod-openapi";
import { type Deps, newRouter } from "../lib/http.ts";

const Status = z.object({ status: z.string() }).openapi("Health");

const healthz = createRoute({
  method: "get",
  path: "/healthz",
  tags: ["Operations"],
  security: [], // no bearer token needed
  summary: "Liveness: the process serves and the database answers",
  responses: {
    200: { description: "Healthy", content: { "application/json": { schema: Status } } },
    503: { description: "Database unreachable", content: { "application/json": { schema: Status } } },
  },
});

export function healthRoutes({ sql }: Deps) {
  return newRouter().openapi(healthz, async (c) => {
    try {
      await sql`select 1`;
      return c.json({ status: "ok" }, 200);
    } catch {
      return c.json({ status: "unavailable" }, 503);
    }
  });
}
