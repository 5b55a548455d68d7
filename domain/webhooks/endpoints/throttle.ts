/**
 * The per-endpoint delivery throttle's rules and reads (docs/webhooks.md, "Throttle"): the bounds of `rate_limit`, the
 * throttle row that setting a rate keeps, and the backlog the endpoint's stats show. The claiming statements take the
 * turns (engine/statements/throttle_turn.ts), and which answers hold a whole endpoint back is decisions.ts's
 * (`endpointHoldSeconds`); this file is what the endpoint operations and the stats route share.
 */

import type { Sql, SqlOrTransaction } from "../../infra/db.ts";
import type { ErrorBag } from "../../basics/errors.ts";
import { isoUtcOrNull } from "../../basics/time.ts";

/** The slowest rate an endpoint may ask for: one delivery every 100 seconds. */
export const MIN_RATE_LIMIT = 0.01;
/** The fastest: beyond it a receiver is better served by max_concurrency alone. */
export const MAX_RATE_LIMIT = 1000;

/**
 * A rate_limit is deliveries per second, fractional allowed (0.5: one every two seconds), between MIN_RATE_LIMIT and
 * MAX_RATE_LIMIT; null (no throttle) and absent are always fine. The route's schema says the same; this holds it for
 * every caller of the endpoint operations.
 */
export function checkRateLimit(errors: ErrorBag, rate: number | null | undefined) {
  if (rate == null) return;
  if (!Number.isFinite(rate) || rate < MIN_RATE_LIMIT || rate > MAX_RATE_LIMIT) {
    errors.add(
      "rate_limit",
      `must be a number of deliveries per second from ${MIN_RATE_LIMIT} to ${MAX_RATE_LIMIT}, or null for none`,
    );
  }
}

/**
 * Keeps the endpoint's throttle row in step with its rate_limit, in the transaction that set it: a row for an endpoint
 * with a rate (the claims take their turns from it), none once the rate is gone and no 429 holds it any more.
 */
export async function fitThrottle(tx: SqlOrTransaction, endpointId: string): Promise<void> {
  await tx`
    insert into webhook_endpoint_throttles (endpoint_id)
    select id from webhook_endpoints where id = ${endpointId} and rate_limit is not null
    on conflict (endpoint_id) do nothing`;
  await tx`
    delete from webhook_endpoint_throttles t using webhook_endpoints e
    where t.endpoint_id = ${endpointId} and e.id = t.endpoint_id and e.rate_limit is null and t.next_send_at <= now()`;
}

/** The throttle's part of an endpoint's stats: its rate, until when its next attempt waits, and its backlog. */
export type ThrottleState = { rate_limit: number | null; throttled_until: string | null; pending: number };

/**
 * What the endpoint's stats show of its throttle: `throttled_until` while its next turn (a rate's interval, or a
 * 429's Retry-After) is still to come, and `pending`, the records waiting to be delivered. Read after the stats,
 * which answer 404 for an endpoint of another company.
 */
export async function throttleOf(sql: Sql, companyId: string, endpointId: string): Promise<ThrottleState> {
  const [row] = await sql<{ rate_limit: number | null; throttled_until: Date | null; pending: number }[]>`
    select e.rate_limit,
      (select t.next_send_at from webhook_endpoint_throttles t where t.endpoint_id = e.id and t.next_send_at > now())
        as throttled_until,
      (select count(*)::int from webhook_deliveries d where d.endpoint_id = e.id and d.status = 'pending') as pending
    from webhook_endpoints e where e.company_id = ${companyId} and e.id = ${endpointId}`;
  return {
    rate_limit: row?.rate_limit ?? null,
    throttled_until: isoUtcOrNull(row?.throttled_until ?? null),
    pending: row?.pending ?? 0,
  };
}
