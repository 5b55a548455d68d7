/**
 * The headers every answer carries (`securityHeaders`, set in place on the answer built: `setAnswerHeader`) and the
 * content security policy of the HTML pages (`HTML_CSP`): app.ts applies the first on every path, and `/docs` and
 * `/console` both send the second.
 */

import type { Context } from "hono";

/**
 * Headers every answer carries: `nosniff`, so a browser never runs a JSON or uploaded body as a script or page; and
 * `Cache-Control: no-store` unless the route chose otherwise (static assets), so no proxy or browser keeps a copy of
 * an answer that belongs to one company or carries a signing secret. Called once the answer is built (app.ts, the
 * first layer of the chain), an error's too.
 */
export function securityHeaders(c: Context) {
  const headers = c.res.headers;
  if (!headers.has("x-content-type-options")) setAnswerHeader(c, "x-content-type-options", "nosniff");
  if (!headers.has("cache-control")) setAnswerHeader(c, "cache-control", "no-store");
}

/**
 * Sets a header on the answer already built, in place: `c.header` would copy the whole Response for it (Hono cannot
 * know whether its headers may change), and setting headers before the handler made every answer copy a prepared
 * `Headers` (docs/performance.md, "The path every request takes"). An answer whose headers are immutable (one
 * returned as it came from `fetch`) is copied once, by `c.header`.
 */
export function setAnswerHeader(c: Context, name: string, value: string) {
  try {
    c.res.headers.set(name, value);
  } catch {
    c.header(name, value);
  }
}

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
