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

/** The company id of a valid bearer token, or null. Only HS256 is accepted; `alg: none` never is. */
export async function companyOfToken(secret: string, header: string | undefined): Promise<string | null> {
  const match = TOKEN_RE.exec(header ?? "");
  if (!match) return null;
  try {
    const payload = await verify(match[1], secret, "HS256");
    const sub = payload.sub;
    return typeof sub === "string" && UUID_RE.test(sub) ? sub.toLowerCase() : null;
  } catch {
    return null;
  }
}

type Verified = { companyId: string; exp: number | undefined };
const MAX_CACHED_TOKENS = 10_000;

/**
 * Verifying a signature imports the key and runs HMAC on every call; integrators reuse one token for
 * thousands of requests, so a verified token is remembered (its `exp` still checked on every use).
 */
function tokenCache(secret: string) {
  const cache = new Map<string, Verified>();
  return async (header: string | undefined): Promise<string | null> => {
    if (!header) return null;
    const hit = cache.get(header);
    if (hit) return hit.exp === undefined || hit.exp > Date.now() / 1000 ? hit.companyId : null;
    const companyId = await companyOfToken(secret, header);
    if (!companyId) return null;
    const exp = JSON.parse(atob(header.split(".")[1].replace(/-/g, "+").replace(/_/g, "/"))).exp;
    if (cache.size >= MAX_CACHED_TOKENS) cache.clear();
    cache.set(header, { companyId, exp: typeof exp === "number" ? exp : undefined });
    return companyId;
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
