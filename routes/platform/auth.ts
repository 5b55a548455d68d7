import type { MiddlewareHandler } from "hono";
import { unauthorized } from "../../domain/platform/errors.ts";
import { type TokenSettings, type Verified, verifyBearer } from "../../domain/platform/tokens.ts";

const MAX_CACHED_TOKENS = 10_000;

/**
 * Verifying a signature imports the key and runs HMAC on every call; integrators reuse one token for
 * thousands of requests, so a verified token is remembered (its `exp` still checked on every use). Only tokens that
 * passed every check are kept, and the settings they were checked against are fixed for the life of the cache.
 */
function tokenCache(settings: TokenSettings) {
  const cache = new Map<string, Verified>();
  return async (header: string | undefined): Promise<string | null> => {
    if (!header) return null;
    let verified = cache.get(header);
    if (!verified) {
      const fresh = await verifyBearer(settings, header);
      if (!fresh) return null;
      if (cache.size >= MAX_CACHED_TOKENS) cache.clear();
      cache.set(header, verified = fresh);
    }
    if (verified.exp > Date.now() / 1000) return verified.companyId;
    cache.delete(header);
    return null;
  };
}

/** Rejects the request with 401 unless it carries a valid token; stores the company id on the context. */
export function requireCompany(
  settings: TokenSettings,
  ensureCompany: (id: string) => Promise<void>,
): MiddlewareHandler<{ Variables: { companyId: string } }> {
  const companyOf = tokenCache(settings);
  return async (c, next) => {
    const companyId = await companyOf(c.req.header("authorization"));
    if (!companyId) throw unauthorized();
    await ensureCompany(companyId);
    c.set("companyId", companyId);
    await next();
  };
}
