/** The middleware side of the per-company rate limit; its shared buckets are in domain/requests/rate_limits.ts. */

import type { MiddlewareHandler } from "hono";
import { tooManyRequests } from "../../domain/basics/errors.ts";
import type { RateLimiter } from "../../domain/requests/rate_limits.ts";

/**
 * Requests per second per company, after authentication (the company is the key) and before the body is read.
 * Over the rate: 429 with Retry-After, the request not handled. The buckets are shared by every instance
 * (domain/requests/rate_limits.ts).
 */
export function limitPerCompany(limiter: RateLimiter): MiddlewareHandler<{ Variables: { companyId: string } }> {
  if (!limiter.enabled) return (_c, next) => next();
  return async (c, next) => {
    const wait = await limiter.take(c.get("companyId"));
    if (wait > 0) throw tooManyRequests(wait);
    await next();
  };
}
