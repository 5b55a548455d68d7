/** A route middleware capping the requests that run at once, per company and per instance: the endpoint stats reads. */

import type { MiddlewareHandler } from "hono";
import { serviceUnavailable, tooManyRequests } from "../../domain/basics/errors.ts";

/**
 * A cap on the requests of a route that run at once in this instance: at most `perCompany` of one company and
 * `perInstance` of all together. One more answers at once, 429 with `Retry-After` when the company's own share is
 * full and 503 with `Retry-After` when the instance's is, instead of waiting for a database connection: one tenant's
 * reads never fill the pool the others' requests need (docs/limits.md, "Endpoint stats reads").
 */
export function capConcurrency(
  caps: { perCompany: number; perInstance: number },
): MiddlewareHandler<{ Variables: { companyId: string } }> {
  const running = new Map<string, number>();
  let total = 0;
  return async (c, next) => {
    const companyId = c.get("companyId");
    const mine = running.get(companyId) ?? 0;
    if (mine >= caps.perCompany) throw tooManyRequests(1);
    if (total >= caps.perInstance) throw serviceUnavailable(1);
    running.set(companyId, mine + 1);
    total++;
    try {
      await next();
    } finally {
      total--;
      const left = (running.get(companyId) ?? 1) - 1;
      if (left) running.set(companyId, left);
      else running.delete(companyId);
    }
  };
}
