/** The integrator console's routes: `/console`, the page rendered once when the app is built, and its assets. */

import { Hono } from "hono";
import { notFound } from "../../domain/basics/errors.ts";
import { HTML_CSP } from "../policy/headers.ts";
import { ConsolePage } from "./page.tsx";

const ASSETS: Record<string, string> = {
  "console.js": "application/javascript; charset=utf-8",
  "chart.js": "application/javascript; charset=utf-8",
  "console.css": "text/css; charset=utf-8",
};

/**
 * The integrator console at /console: one page rendered on the server and its assets (a script module, the chart's
 * hourly buckets it imports, a stylesheet), served from the repository. Everything it does goes through the public
 * API with the signed-in user's token.
 */
export function consoleRoutes() {
  const page = "<!doctype html>" + String(ConsolePage());
  const cache = new Map<string, Uint8Array>();
  return new Hono()
    .get("/console", (c) => c.html(page, 200, { "content-security-policy": HTML_CSP, "cache-control": "no-store" }))
    .get("/console/assets/:file", async (c) => {
      const file = c.req.param("file");
      const type = ASSETS[file];
      if (!type) throw notFound();
      let bytes = cache.get(file);
      if (!bytes) cache.set(file, bytes = await Deno.readFile(new URL(`./assets/${file}`, import.meta.url)));
      return c.body(bytes as Uint8Array<ArrayBuffer>, 200, { "content-type": type, "cache-control": "no-cache" });
    });
}
