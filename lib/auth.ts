import type { MiddlewareHandler } from "hono";
import { sign, verify } from "hono/jwt";
import { unauthorized } from "./errors.ts";
import { UUID_RE } from "./ids.ts";

/** Signs an HS256 token whose `sub` is the company id (the integrator account). */
export function signToken(secret: string, companyId: string, ttlSeconds = 30 * 24 * 3600): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return sign({ sub: companyId, iat: now, exp: now + ttlSeconds }, secret, "HS256");
}

/** The company id of a valid bearer token, or null. Only HS256 is accepted; `alg: none` never is. */
export async function companyOfToken(secret: string, header: string | undefined): Promise<string | null> {
  const match = /^Bearer ([A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]*)$/.exec(header ?? "");
  if (!match) return null;
  try {
    const payload = await verify(match[1], secret, "HS256");
    const sub = payload.sub;
    return typeof sub === "string" && UUID_RE.test(sub) ? sub.toLowerCase() : null;
  } catch {
    return null;
  }
}

/** Rejects the request with 401 unless it carries a valid token; stores the company id on the context. */
export function requireCompany(
  secret: string,
  ensureCompany: (id: string) => Promise<void>,
): MiddlewareHandler<{ Variables: { companyId: string } }> {
  return async (c, next) => {
    const companyId = await companyOfToken(secret, c.req.header("authorization"));
    if (!companyId) throw unauthorized();
    await ensureCompany(companyId);
    c.set("companyId", companyId);
    await next();
  };
}
