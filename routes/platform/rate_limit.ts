import type { MiddlewareHandler } from "hono";
import { tooManyRequests } from "../../domain/platform/errors.ts";
import { RateLimiter } from "../../domain/platform/rate_limit.ts";

/**
 * Requests per second per company, after authentication (the company is the key) and before the body is read.
 * Over the rate: 429 with Retry-After, the request not handled. Each router made by `createApp` has its own buckets.
 */
export function limitPerCompany(
  opts: { perSecond: number; burst: number },
): MiddlewareHandler<{ Variables: { companyId: string } }> {
  const limiter = new RateLimiter(opts);
  return async (c, next) => {
    const wait = limiter.take(c.get("companyId"));
    if (wait > 0) throw tooManyRequests(wait);
    await next();
  };
}
