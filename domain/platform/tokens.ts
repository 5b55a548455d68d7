import { timingSafeEqual } from "node:crypto";
import { sign, verify } from "hono/jwt";
import type { Config } from "./config.ts";
import { UUID_RE } from "./ids.ts";

/** What signing and checking a bearer token needs from the configuration. */
export type TokenSettings = Pick<Config, "jwtSecret" | "jwtIssuer" | "jwtAudience" | "jwtMaxTtlSeconds">;

/**
 * Signs an HS256 token whose `sub` is the company id (the integrator account), with this service's `iss` and `aud`.
 * It lives `ttlSeconds`, the longest lifetime accepted unless told otherwise.
 */
export function signToken(
  settings: TokenSettings,
  companyId: string,
  ttlSeconds = settings.jwtMaxTtlSeconds,
): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return sign(
    { sub: companyId, iss: settings.jwtIssuer, aud: settings.jwtAudience, iat: now, exp: now + ttlSeconds },
    settings.jwtSecret,
    "HS256",
  );
}

const TOKEN_RE = /^Bearer ([A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]*)$/;

export type Verified = { companyId: string; exp: number };

/**
 * The company (and expiry) of a valid bearer token, or null. Only HS256 is accepted (`alg: none` never is), `iss` and
 * `aud` must name this service, and `iat` and `exp` must both be there, at most `jwtMaxTtlSeconds` apart: a leaked
 * token stops working by itself, and nobody holding an old key can sign one that never expires.
 */
export async function verifyBearer(settings: TokenSettings, header: string | undefined): Promise<Verified | null> {
  const match = TOKEN_RE.exec(header ?? "");
  if (!match) return null;
  try {
    const { sub, exp, iat } = await verify(match[1], settings.jwtSecret, {
      alg: "HS256",
      iss: settings.jwtIssuer,
      aud: settings.jwtAudience,
    });
    if (typeof sub !== "string" || !UUID_RE.test(sub)) return null;
    if (typeof exp !== "number" || typeof iat !== "number" || exp - iat > settings.jwtMaxTtlSeconds) return null;
    return { companyId: sub.toLowerCase(), exp };
  } catch {
    return null;
  }
}

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
