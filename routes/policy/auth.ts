/** `/api`'s bearer-token check: the middleware that names a request's company, and its cache of verified tokens. */

import type { MiddlewareHandler } from "hono";
import type { TokenGuard } from "../../domain/integrators/token_guard.ts";
import { forbidden, unauthorized } from "../../domain/basics/errors.ts";
import { PORTAL_FORBIDDEN, portalMayCall } from "./portal_scope.ts";
import {
  CLOCK_SKEW_SECONDS,
  type TokenSettings,
  type Verified,
  verifyBearer,
} from "../../domain/integrators/tokens.ts";

const MAX_CACHED_TOKENS = 10_000;

/**
 * Verifying a signature imports the key and runs HMAC on every call; integrators reuse one token for
 * thousands of requests, so a verified token is remembered (its `exp` still checked on every use). Only tokens that
 * passed every check are kept, and the settings they were checked against are fixed for the life of the cache.
 */
function tokenCache(settings: TokenSettings) {
  const cache = new Map<string, Verified>();
  return async (header: string | undefined): Promise<Verified | null> => {
    if (!header) return null;
    let verified = cache.get(header);
    if (!verified) {
      const fresh = await verifyBearer(settings, header);
      if (!fresh) return null;
      if (cache.size >= MAX_CACHED_TOKENS) cache.clear();
      cache.set(header, verified = fresh);
    }
    if (verified.exp > Date.now() / 1000 - CLOCK_SKEW_SECONDS) return verified;
    cache.delete(header);
    return null;
  };
}

/**
 * Rejects the request with 401 unless it carries a valid token that was not revoked (`guard`); stores the company
 * and the session (null for a token not from sign-in) on the context. A portal session's token is refused (403)
 * outside the routes a portal may call (portal_scope.ts).
 */
export function requireCompany(
  settings: TokenSettings,
  guard: TokenGuard,
): MiddlewareHandler<{ Variables: { companyId: string; sessionId: string | null } }> {
  const verifiedOf = tokenCache(settings);
  return async (c, next) => {
    const token = await verifiedOf(c.req.header("authorization"));
    if (!token || !(await guard.accepts(token))) throw unauthorized();
    if (token.portal && !portalMayCall(c.req.path)) throw forbidden(PORTAL_FORBIDDEN);
    c.set("companyId", token.companyId);
    c.set("sessionId", token.sessionId);
    await next();
  };
}
