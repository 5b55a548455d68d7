/**
 * The origins a portal link lets frame the console (docs/webhooks.md, "Portal links"): which are accepted and the one
 * form each is stored and sent in. Pure and apart from portal_links.ts so its rules are unit-tested without a database;
 * whatever it returns goes into a Content-Security-Policy header as it is, so nothing but scheme, host and port passes.
 */
import { addFieldError, type FieldErrors, validationFailed } from "../basics/errors.ts";

/** How many origins one link may name: a platform frames its console from a few of its own hosts, not hundreds. */
export const MAX_ALLOWED_ORIGINS = 10;

export const ORIGIN_FORMAT =
  "has invalid format: expected an https origin (scheme, host and optional port, no path), e.g. https://app.example.com";
export const HTTPS_ONLY = "must use https: http is accepted only for a loopback host (localhost, 127.0.0.1, [::1]) " +
  "in development";

const LABEL = "[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?";
/** What `URL.origin` gives for a host name, an IPv4 or a bracketed IPv6 address: no `*`, `;`, `,`, quote or space. */
const ORIGIN_RE = new RegExp(`^https?://(?:${LABEL}(?:\\.${LABEL})*|\\[[0-9a-f:.]+\\])(?::\\d{1,5})?$`);

/**
 * The origin `input` names, as browsers compare it (lower-case host, default port dropped), or the message saying why
 * it is refused. A trailing `/` is the only path allowed. `http:` passes only for a loopback host and only when
 * `allowLoopbackHttp` (development): a page served over http anywhere else can be tampered with on the way.
 */
export function parseOrigin(input: string, opts: { allowLoopbackHttp: boolean }): { origin: string } | {
  error: string;
} {
  let url: URL;
  try {
    url = new URL(input);
  } catch {
    return { error: ORIGIN_FORMAT };
  }
  const bare = url.username === "" && url.password === "" && url.pathname === "/" && !/[?#]/.test(input);
  if (!bare || !ORIGIN_RE.test(url.origin)) return { error: ORIGIN_FORMAT };
  if (url.protocol === "http:" && !(opts.allowLoopbackHttp && isLoopback(url.hostname))) return { error: HTTPS_ONLY };
  return { origin: url.origin };
}

function isLoopback(hostname: string): boolean {
  return hostname === "localhost" || hostname === "[::1]" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname);
}

/** The `frame-ancestors` sources of a link's origins: exactly those, or `'none'` when it names none. */
export function frameAncestors(origins: readonly string[]): string {
  return origins.length ? origins.join(" ") : "'none'";
}

/**
 * The origins of a link's body, each in its one form and without repeats; every refused one is named by its place in
 * the list (`allowed_origins.1`), all at once, as a 422. An element that is not a string was refused by the body's shape
 * already, and is passed over.
 */
export function parseAllowedOrigins(list: readonly unknown[], opts: { allowLoopbackHttp: boolean }): string[] {
  const errors: FieldErrors = {};
  const origins: string[] = [];
  list.forEach((input, i) => {
    if (typeof input !== "string") return;
    const parsed = parseOrigin(input, opts);
    if ("error" in parsed) addFieldError(errors, ["allowed_origins", i], parsed.error);
    else if (!origins.includes(parsed.origin)) origins.push(parsed.origin);
  });
  if (Object.keys(errors).length) throw validationFailed(errors, 422);
  return origins;
}
