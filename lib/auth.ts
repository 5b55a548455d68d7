import type { MiddlewareHandler } from "hono";
import { sign, verify } from "hono/jwt";
import { unauthorized } from "./errors.ts";
import { UUID_RE } from "./ids.ts";

/** Signs an HS256 token whose `sub` is the company id (the integrator account). */
export function signToken(secret: string, companyId: string, ttlSeconds = 30 * 24 * 3600): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return sign({ sub: companyId, iat: now, exp: now + ttlSeconds }, secret, "HS256");
}

const TOKEN_RE = /^Bearer ([A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]*)$/;

type Verified = { companyId: string; exp: number | undefined };

/** The company (and expiry) of a valid bearer token, or null. Only HS256 is accepted; `alg: none` never is. */
async function verifyBearer(secret: string, header: string | undefined): Promise<Verified | null> {
  const match = TOKEN_RE.exec(header ?? "");
  if (!match) return null;
  try {
    const { sub, exp } = await verify(match[1], secret, "HS256");
    if (typeof sub !== "string" || !UUID_RE.test(sub)) return null;
    return { companyId: sub.toLowerCase(), exp: typeof exp === "number" ? exp : undefined };
  } catch {
    return null;
  }
}

const MAX_CACHED_TOKENS = 10_000;

/**
 * Verifying a signature imports the key and runs HMAC on every call; integrators reuse one token for
 * thousands of requests, so a verified token is remembered (its `exp` still checked on every use).
 */
function tokenCache(secret: string) {
  const cache = new Map<string, Verified>();
  return async (header: string | undefined): Promise<string | null> => {
    if (!header) return null;
    let verified = cache.get(header);
    if (!verified) {
      const fresh = await verifyBearer(secret, header);
      if (!fresh) return null;
      if (cache.size >= MAX_CACHED_TOKENS) cache.clear();
      cache.set(header, verified = fresh);
    }
    return verified.exp === undefined || verified.exp > Date.now() / 1000 ? verified.companyId : null;
  };
}

/** Rejects the request with 401 unless it carries a valid token; stores the company id on the context. */
export function requireCompany(
  secret: string,
  ensureCompany: (id: string) => Promise<void>,
): MiddlewareHandler<{ Variables: { companyId: string } }> {
  const companyOf = tokenCache(secret);
  return async (c, next) => {
    const companyId = await companyOf(c.req.header("authorization"));
    if (!companyId) throw unauthorized();
    await ensureCompany(companyId);
    c.set("companyId", companyId);
    await next();
  };
}
