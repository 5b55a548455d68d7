/** The middleware side of the per-company rate limit; the shared buckets it draws on are in rate_limit_buckets.ts. */

import type { MiddlewareHandler } from "hono";
import { tooManyRequests } from "../../domain/basics/errors.ts";
import type { RateLimiter } from "./rate_limit_buckets.ts";

/**
 * Requests per second per company, after authentication (the company is the key) and before the body is read.
 * Over the rate: 429 with Retry-After, the request not handled. The buckets are shared by every instance
 * (routes/policy/rate_limit_buckets.ts).
 */
export function limitPerCompany(limiter: RateLimiter): MiddlewareHandler<{ Variables: { companyId: string } }> {
  if (!limiter.enabled) return (_c, next) => next();
  return async (c, next) => {
    const wait = await limiter.take(c.get("companyId"));
    if (wait > 0) throw tooManyRequests(wait);
    await next();
  };
}
