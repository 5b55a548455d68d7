import { sign, verify } from "hono/jwt";
import { UUID_RE } from "./ids.ts";

/** Signs an HS256 token whose `sub` is the company id (the integrator account). */
export function signToken(secret: string, companyId: string, ttlSeconds = 30 * 24 * 3600): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return sign({ sub: companyId, iat: now, exp: now + ttlSeconds }, secret, "HS256");
}

const TOKEN_RE = /^Bearer ([A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]*)$/;

export type Verified = { companyId: string; exp: number | undefined };

/** The company (and expiry) of a valid bearer token, or null. Only HS256 is accepted; `alg: none` never is. */
export async function verifyBearer(secret: string, header: string | undefined): Promise<Verified | null> {
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
