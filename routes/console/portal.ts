/**
 * The console page of a portal link, `/console/portal/:id` (docs/webhooks.md, "Portal links"), what it wears (the
 * link's logo and accent stylesheet, served from this origin beside it), and the script that exchanges the link's
 * code, `/console/portal.js`. Apart from console.ts because this page depends on the link: it may be framed by the
 * origins the link names, where `/console` may be framed by nobody, and it carries the platform's name, not ours.
 */

import { Hono } from "hono";
import type { Deps } from "../../domain/infra/deps.ts";
import type { Config } from "../../domain/infra/config.ts";
import { notFound } from "../../domain/basics/errors.ts";
import { UUID_RE } from "../../domain/basics/ids.ts";
import { portalLogo, portalPage } from "../../domain/integrators/portal_links.ts";
import { ACCENT_COLOR_RE, textOnAccent } from "../../domain/integrators/portal_branding.ts";
import { frameAncestors } from "../../domain/integrators/portal_origins.ts";
import { htmlCspFramedBy } from "../policy/headers.ts";
import { ConsolePage } from "./page.tsx";

/**
 * First in the head, before the console's own script: it takes the code out of the address bar before anything else
 * can read it, and the console then finds the session's token where it keeps a signed-in user's.
 */
const PORTAL_SCRIPT = '<script src="/console/portal.js"></script>';

/** Seconds as a customer reads them: "1 hour", "3 days", "90 seconds". */
function duration(seconds: number): string {
  for (const [unit, size] of [["day", 86_400], ["hour", 3600], ["minute", 60]] as const) {
    if (seconds >= size && seconds % size === 0) return `${seconds / size} ${unit}${seconds === size ? "" : "s"}`;
  }
  return `${seconds} second${seconds === 1 ? "" : "s"}`;
}

/**
 * What each setting the catalogue's descriptions name is on this instance, in a customer's words: the portal shows
 * these in their place (page.tsx, `Description`), since a platform's customer can neither read nor change them.
 */
export function customerWords(config: Config): Record<string, string> {
  return {
    WEBHOOK_FAILING_AFTER_ATTEMPTS: String(config.webhookFailingAfterAttempts),
    WEBHOOK_FAILING_AFTER_SECONDS: duration(config.webhookFailingAfterSeconds),
    WEBHOOK_DISABLE_AFTER_SECONDS: duration(config.webhookDisableAfterSeconds),
  };
}

/** The link `id` of a path, lower-cased, or null when it cannot be one (no query for it). */
const linkId = (id: string) => UUID_RE.test(id) ? id.toLowerCase() : null;

/**
 * The console's page with the portal script, served for a link's id, wearing the link's branding: framed only by the
 * link's origins while the link can still open or its session lasts; by nobody, and unbranded, for an id that is
 * unknown, revoked or over (the page then says the link no longer opens). The logo and the accent's stylesheet are
 * served under the page's path while it opens, so `img-src 'self'` and `style-src 'self'` take them as they are.
 */
export function portalPageRoutes({ sql, config }: Deps) {
  const words = customerWords(config);
  let script: Uint8Array | undefined;
  return new Hono()
    .get("/console/portal/:id", async (c) => {
      const id = linkId(c.req.param("id"));
      const link = id ? await portalPage(sql, id) : null;
      const brand = link?.branding;
      const look = {
        linkId: id ?? "none",
        name: brand?.name ?? null,
        accent: brand?.accentColor != null,
        supportUrl: brand?.supportUrl ?? null,
        logo: brand?.logoType != null,
        words,
      };
      const page = "<!doctype html>" +
        String(ConsolePage({ portal: look })).replace("<head>", `<head>${PORTAL_SCRIPT}`);
      if (!page.includes(PORTAL_SCRIPT)) throw new Error("the console page has no <head> to put the portal script in");
      const csp = htmlCspFramedBy(frameAncestors(link?.allowedOrigins ?? []));
      return c.html(page, 200, { "content-security-policy": csp, "cache-control": "no-store" });
    })
    .get("/console/portal/:id/logo", async (c) => {
      const id = linkId(c.req.param("id"));
      const logo = id ? await portalLogo(sql, id) : null;
      if (!logo) throw notFound();
      // the type its bytes were found to be when stored; nosniff, so no browser reads them as anything else
      return c.body(logo.bytes as Uint8Array<ArrayBuffer>, 200, {
        "content-type": logo.type,
        "x-content-type-options": "nosniff",
        "cache-control": "no-cache",
      });
    })
    .get("/console/portal/:id/brand.css", async (c) => {
      const id = linkId(c.req.param("id"));
      const accent = id ? (await portalPage(sql, id))?.branding.accentColor : null;
      // stored checked, checked again: nothing but a colour is ever written into a stylesheet
      if (!accent || !ACCENT_COLOR_RE.test(accent)) throw notFound();
      // the variables console.css reads for the mark and the main buttons, and a rule of the colour above the bar
      const css = `:root {\n  --brand: ${accent};\n  --brand-text: ${textOnAccent(accent)};\n}\n` +
        `.top {\n  border-top: 4px solid ${accent};\n}\n`;
      return c.body(css, 200, {
        "content-type": "text/css; charset=utf-8",
        "x-content-type-options": "nosniff",
        "cache-control": "no-cache",
      });
    })
    .get("/console/portal.js", async (c) => {
      script ??= await Deno.readFile(new URL("./assets/portal.js", import.meta.url));
      return c.body(script as Uint8Array<ArrayBuffer>, 200, {
        "content-type": "application/javascript; charset=utf-8",
        "cache-control": "no-cache",
      });
    });
}
