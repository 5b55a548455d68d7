/**
 * What the worker sweep does for webhook deliveries when something went wrong: frees the leases of dead worker
 * processes and wakes endpoints whose due records nobody delivers. Apart from the delivery path, which never needs it.
 */

import type { Sql } from "../../infra/db.ts";
import { wakeEndpoints } from "../outbox/wake.ts";

/** A due record that no drainer has claimed for this long is woken again by the sweep. */
const STALLED_AFTER_SECONDS = 10;

/**
 * After worker processes died: frees the concurrency slots and in-flight records their leases held (the attempt
 * never got recorded, so it is made again: at-least-once) and wakes the endpoints concerned.
 */
export async function releaseDeadLeases(sql: Sql, processIds: string[]): Promise<void> {
  if (!processIds.length) return;
  await sql.begin(async (tx) => {
    const released = await tx<{ endpoint_id: string }[]>`
      with slots as (
        update webhook_slots set delivery_id = null, leased_until = null, leased_by = null
        where leased_by = any(${processIds}::uuid[])
        returning endpoint_id
      ), records as (
        update webhook_deliveries set lease_token = null, leased_until = null, leased_by = null
        where leased_by = any(${processIds}::uuid[]) and status = 'pending'
        returning endpoint_id
      )
      select endpoint_id from slots union select endpoint_id from records`;
    await wakeEndpoints(tx, released.map((r) => r.endpoint_id));
  });
}

/**
 * A safety net run by every worker process's sweep: endpoints with records due for a while that nobody delivers
 * (for instance a lease that ran out, or a retry whose process died before its timer woke it) are woken. Normally it
 * finds nothing.
 */
export async function wakeStalledEndpoints(sql: Sql): Promise<number> {
  const stalled = await sql<{ endpoint_id: string }[]>`
    select distinct d.endpoint_id from webhook_deliveries d
    join webhook_endpoints e on e.id = d.endpoint_id and e.status = 'active'
    where d.status = 'pending'
      and d.next_attempt_at < now() - ${STALLED_AFTER_SECONDS} * interval '1 second'
      and lease_is_free(d.leased_until)`;
  if (stalled.length) await wakeEndpoints(sql, stalled.map((r) => r.endpoint_id));
  return stalled.length;
}
