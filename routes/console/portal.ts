/**
 * The console page of a portal link, `/console/portal/:id` (docs/webhooks.md, "Portal links"), and the script that
 * exchanges the link's code, `/console/portal.js`. Apart from console.ts because this page's policy depends on the
 * link: it may be framed by the origins the link names, where `/console` may be framed by nobody.
 */

import { Hono } from "hono";
import type { Deps } from "../../domain/infra/deps.ts";
import { UUID_RE } from "../../domain/basics/ids.ts";
import { framingOrigins } from "../../domain/integrators/portal_links.ts";
import { frameAncestors } from "../../domain/integrators/portal_origins.ts";
import { htmlCspFramedBy } from "../policy/headers.ts";
import { ConsolePage } from "./page.tsx";

/**
 * First in the head, before the console's own script: it takes the code out of the address bar before anything else
 * can read it, and the console then finds the session's token where it keeps a signed-in user's.
 */
const PORTAL_SCRIPT = '<script src="/console/portal.js"></script>';

/**
 * The console's page with the portal script, served for a link's id: framed only by the link's origins while the link
 * can still open or its session lasts; by nobody for an id that is unknown, revoked or over (the page then says the
 * link no longer opens).
 */
export function portalPageRoutes({ sql }: Deps) {
  const page = "<!doctype html>" + String(ConsolePage()).replace("<head>", `<head>${PORTAL_SCRIPT}`);
  if (!page.includes(PORTAL_SCRIPT)) throw new Error("the console page has no <head> to put the portal script in");
  let script: Uint8Array | undefined;
  return new Hono()
    .get("/console/portal/:id", async (c) => {
      const id = c.req.param("id");
      const origins = UUID_RE.test(id) ? await framingOrigins(sql, id.toLowerCase()) : null;
      const csp = htmlCspFramedBy(frameAncestors(origins ?? []));
      return c.html(page, 200, { "content-security-policy": csp, "cache-control": "no-store" });
    })
    .get("/console/portal.js", async (c) => {
      script ??= await Deno.readFile(new URL("./assets/portal.js", import.meta.url));
      return c.body(script as Uint8Array<ArrayBuffer>, 200, {
        "content-type": "application/javascript; charset=utf-8",
        "cache-control": "no-cache",
      });
    });
}
