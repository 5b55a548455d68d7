/** The instance-wide cap on requests handled at once, applied to every path before authentication and the body read. */

import type { MiddlewareHandler } from "hono";
import { serviceUnavailable } from "../../domain/basics/errors.ts";

/**
 * At most `max` requests are handled at once; one more answers 503 with `Retry-After` at once instead of queueing
 * for database connections and memory (each may hold a body of up to 22 MB). Every path counts, `/healthz` too: it
 * asks the database, and an exempt path was a way for anonymous clients to hold connections the others wait for
 * (docs/limits.md, "What an anonymous request can grow").
 */
export function limitInFlight(max: number): MiddlewareHandler {
  let inFlight = 0;
  return async (c, next) => {
    if (inFlight >= max) throw serviceUnavailable(1);
    inFlight++;
    let counted = true;
    const leave = () => {
      if (counted) inFlight--;
      counted = false;
    };
    // a pull stream's long poll or live stream leaves the bound once it waits, under caps of its own: waiting
    // requests must never make `/healthz` answer 503 (docs/webhooks.md, "Pull streams")
    c.set("leaveInFlight", leave);
    try {
      await next();
    } finally {
      leave();
    }
  };
}
