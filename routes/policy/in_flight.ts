import type { MiddlewareHandler } from "hono";
import { serviceUnavailable } from "../../domain/basics/errors.ts";

/**
 * At most `max` requests are handled at once; one more answers 503 with `Retry-After` at once instead of queueing
 * for database connections and memory (each may hold a body of up to 22 MB). Paths in `exempt` are always served:
 * liveness must not fail only because the instance is busy.
 */
export function limitInFlight(max: number, exempt: string[] = []): MiddlewareHandler {
  let inFlight = 0;
  return async (c, next) => {
    if (exempt.includes(c.req.path)) return next();
    if (inFlight >= max) throw serviceUnavailable(1);
    inFlight++;
    try {
      await next();
    } finally {
      inFlight--;
    }
  };
}
