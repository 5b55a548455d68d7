/**
 * The headers every answer carries (`securityHeaders`) and the content security policy of the HTML pages (`HTML_CSP`):
 * app.ts mounts the first for every path, and `/docs` and `/console` both send the second.
 */

import type { MiddlewareHandler } from "hono";

/**
 * Headers every answer carries: `nosniff`, so a browser never runs a JSON or uploaded body as a script or page; and
 * `Cache-Control: no-store` unless the route chose otherwise (static assets), so no proxy or browser keeps a copy of
 * an answer that belongs to one company or carries a signing secret.
 */
export const securityHeaders: MiddlewareHandler = async (c, next) => {
  // Set before the handler, so the answer is built with them (a route's own Cache-Control replaces the default):
  // set after `next`, each header would make Hono copy the whole Response again. An answer built without the
  // context (a `Response` returned as is) gets them afterwards.
  c.header("x-content-type-options", "nosniff");
  c.header("cache-control", "no-store");
  await next();
  if (c.res.headers.has("x-content-type-options")) return;
  c.header("x-content-type-options", "nosniff");
  if (!c.res.headers.has("cache-control")) c.header("cache-control", "no-store");
};

/**
 * The policy of the HTML pages: scripts, styles and images from this origin only, no inline script, no framing, no
 * form posting elsewhere.
 */
export const HTML_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

/**
 * `HTML_CSP` for the console page of a portal link (docs/webhooks.md, "Portal links"): the same policy, but framed by
 * exactly `ancestors` (the `frame-ancestors` sources of the link's origins) instead of by nobody.
 */
export function htmlCspFramedBy(ancestors: string): string {
  return HTML_CSP.split("; ").filter((d) => !d.startsWith("frame-ancestors ")).concat(`frame-ancestors ${ancestors}`)
    .join("; ");
}
