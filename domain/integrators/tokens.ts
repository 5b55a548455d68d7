/**
 * Bearer tokens: HS256 signing and checking, and the constant-time comparison of the metrics token. No database here:
 * whether a valid token was revoked since is token_guard.ts's question.
 */
import { timingSafeEqual } from "node:crypto";
import { sign, verify } from "hono/jwt";
import type { Config } from "../infra/config.ts";
import { UUID_RE } from "../basics/ids.ts";

/** What signing and checking a bearer token needs from the configuration. */
export type TokenSettings = Pick<Config, "jwtSecret" | "jwtIssuer" | "jwtAudience" | "jwtMaxTtlSeconds">;

/**
 * How far the clocks of the instances (and of whatever signs tokens) may differ: a token issued "2 s from now" by a
 * neighbour whose clock runs ahead is fine, and `exp` and `nbf` get the same margin.
 */
export const CLOCK_SKEW_SECONDS = 60;

/**
 * The audience of a portal session's token (docs/webhooks.md, "Portal links"): the service's own with `:portal`
 * after it, never the service's own alone, so an instance that knows nothing of portal sessions (the previous release,
 * during an upgrade) refuses the token instead of taking it for one that opens the whole company.
 */
export const portalAudience = (settings: Pick<TokenSettings, "jwtAudience">) => `${settings.jwtAudience}:portal`;

/**
 * Signs an HS256 token whose `sub` is the company id (the integrator account), with this service's `iss` and `aud`.
 * It lives `ttlSeconds`, the longest lifetime accepted unless told otherwise. A token from sign-in names its session
 * as `jti` (domain/integrators/sessions.ts), so it can be revoked on its own; a portal session's token (`portal`) has
 * the portal audience, and opens only what a portal may do (routes/policy/portal_scope.ts).
 */
export function signToken(
  settings: TokenSettings,
  companyId: string,
  ttlSeconds = settings.jwtMaxTtlSeconds,
  sessionId?: string,
  opts: { portal?: boolean } = {},
): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const claims = {
    sub: companyId,
    iss: settings.jwtIssuer,
    aud: opts.portal ? portalAudience(settings) : settings.jwtAudience,
    iat: now,
    exp: now + ttlSeconds,
  };
  return sign(sessionId ? { ...claims, jti: sessionId } : claims, settings.jwtSecret, "HS256");
}

const TOKEN_RE = /^Bearer ([A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]*)$/;

/** `portal`: the token of a portal session (docs/webhooks.md, "Portal links"), which opens the webhook routes only. */
export type Verified = { companyId: string; iat: number; exp: number; sessionId: string | null; portal: boolean };

/**
 * The company, session and lifetime of a valid bearer token, or null. Only HS256 is accepted (`alg: none` never
 * is), `iss` and `aud` must name this service, and `iat` and `exp` must both be there, at most `jwtMaxTtlSeconds`
 * apart: a leaked token stops working by itself, and nobody holding an old key can sign one that never expires. `iat`,
 * `nbf` and `exp` are compared with `CLOCK_SKEW_SECONDS` of margin. Whether the token was revoked since is the
 * TokenGuard's question (domain/integrators/token_guard.ts). A token whose audience is the portal's is a portal
 * session's (`portal: true`).
 */
export async function verifyBearer(
  settings: TokenSettings,
  header: string | undefined,
  nowSeconds = Date.now() / 1000,
): Promise<Verified | null> {
  const match = TOKEN_RE.exec(header ?? "");
  if (!match) return null;
  try {
    const portal = portalAudience(settings);
    const { sub, exp, iat, nbf, jti, aud } = await verify(match[1], settings.jwtSecret, {
      alg: "HS256",
      iss: settings.jwtIssuer,
      aud: [settings.jwtAudience, portal],
      // the times are checked below, with the margin hono's checks do not have
      exp: false,
      nbf: false,
      iat: false,
    });
    if (typeof sub !== "string" || !UUID_RE.test(sub)) return null;
    if (!finite(exp) || !finite(iat) || exp - iat > settings.jwtMaxTtlSeconds) return null;
    if (iat > nowSeconds + CLOCK_SKEW_SECONDS || exp <= nowSeconds - CLOCK_SKEW_SECONDS) return null;
    if (nbf !== undefined && (!finite(nbf) || nbf > nowSeconds + CLOCK_SKEW_SECONDS)) return null;
    if (jti !== undefined && (typeof jti !== "string" || !UUID_RE.test(jti))) return null;
    // naming the portal's audience at all limits the token to the portal, whatever else it names
    const isPortal = (Array.isArray(aud) ? aud : [aud]).includes(portal);
    if (isPortal && jti === undefined) return null; // a portal token without its session could not be revoked
    return { companyId: sub.toLowerCase(), iat, exp, sessionId: jti?.toLowerCase() ?? null, portal: isPortal };
  } catch {
    return null;
  }
}

const finite = (n: unknown): n is number => typeof n === "number" && Number.isFinite(n);

const encoder = new TextEncoder();

/**
 * Whether `header` is `Bearer <expected>`, compared in constant time. Both sides are hashed first, so neither the
 * length nor the first differing byte of the secret shows in the time taken.
 */
export async function bearerMatches(header: string | undefined, expected: string): Promise<boolean> {
  const given = header?.startsWith("Bearer ") ? header.slice("Bearer ".length) : "";
  const [a, b] = await Promise.all(
    [given, expected].map((s) => crypto.subtle.digest("SHA-256", encoder.encode(s))),
  );
  return timingSafeEqual(new Uint8Array(a), new Uint8Array(b));
}
