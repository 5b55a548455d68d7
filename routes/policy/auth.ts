/**
 * `/api`'s bearer-token check: the middleware that names a request's company, its cache of verified tokens, and the
 * challenge a refused token is answered with (docs/errors.md, "Why a 401").
 */

import type { Context, MiddlewareHandler } from "hono";
import type { TokenGuard } from "../../domain/integrators/token_guard.ts";
import { forbidden, unauthorized } from "../../domain/basics/errors.ts";
import { PORTAL_FORBIDDEN, portalMayCall } from "./portal_scope.ts";
import {
  checkBearer,
  CLOCK_SKEW_SECONDS,
  isRefusal,
  REFUSED,
  type TokenRefusal,
  type TokenSettings,
  type Verified,
} from "../../domain/integrators/tokens.ts";

const MAX_CACHED_TOKENS = 10_000;

/**
 * Verifying a signature imports the key and runs HMAC on every call; integrators reuse one token for
 * thousands of requests, so a verified token is remembered (its `exp` still checked on every use). Only tokens that
 * passed every check are kept, and the settings they were checked against are fixed for the life of the cache. A
 * refusal is answered without a lookup more: saying why costs the accepted path nothing.
 */
function tokenCache(settings: TokenSettings) {
  const cache = new Map<string, Verified>();
  return async (header: string | undefined): Promise<Verified | TokenRefusal> => {
    if (!header) return REFUSED.missing;
    let verified = cache.get(header);
    if (!verified) {
      const fresh = await checkBearer(settings, header);
      if (isRefusal(fresh)) return fresh;
      if (cache.size >= MAX_CACHED_TOKENS) cache.clear();
      cache.set(header, verified = fresh);
    }
    if (verified.exp > Date.now() / 1000 - CLOCK_SKEW_SECONDS) return verified;
    cache.delete(header);
    return REFUSED.expired;
  };
}

/**
 * The `WWW-Authenticate` value of a 401 (RFC 6750, section 3): a request that did not attempt Bearer hears only the
 * scheme; a token that was sent and refused hears `invalid_token` and why. The description is fixed text from
 * `REFUSED`, whose characters the RFC allows in a quoted string.
 *
 * @example
 * ```ts
 * bearerChallenge(REFUSED.expired); // 'Bearer error="invalid_token", error_description="expired"'
 * ```
 */
export function bearerChallenge(refusal: TokenRefusal): string {
  return refusal.reason === "missing"
    ? "Bearer"
    : `Bearer error="invalid_token", error_description="${refusal.description}"`;
}

type AuthEnv = { Variables: { companyId: string; sessionId: string | null; authFailure: string } };

/** The 401 of a refused token, its reason kept on the context for the request's log line. */
function refuse(c: Context<AuthEnv>, refusal: TokenRefusal) {
  c.set("authFailure", refusal.description);
  return unauthorized({ "www-authenticate": bearerChallenge(refusal) });
}

/**
 * Rejects the request with 401 unless it carries a valid token that was not revoked (`guard`); stores the company
 * and the session (null for a token not from sign-in) on the context. A refusal's description goes on the context
 * too (`authFailure`), for the request's log line to say what the challenge said. A portal session's token is refused
 * (403) outside the routes a portal may call (portal_scope.ts).
 */
export function requireCompany(
  settings: TokenSettings,
  guard: TokenGuard,
): MiddlewareHandler<AuthEnv> {
  const verifiedOf = tokenCache(settings);
  return async (c, next) => {
    const token = await verifiedOf(c.req.header("authorization"));
    if ("reason" in token) throw refuse(c, token); // a TokenRefusal; a Verified token has no reason
    if (!(await guard.accepts(token))) throw refuse(c, REFUSED.revoked);
    if (token.portal && !portalMayCall(c.req.method, c.req.path)) throw forbidden(PORTAL_FORBIDDEN);
    c.set("companyId", token.companyId);
    c.set("sessionId", token.sessionId);
    await next();
  };
}
