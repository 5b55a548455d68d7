/**
 * Giving a claimed slot and its record back without an attempt (`releaseClaim`): one statement of the lease protocol,
 * like each file of this folder.
 */

import type { Sql } from "../../infra/db.ts";
import type { ClaimedDelivery } from "./claim_data.ts";

/**
 * Gives a slot and its record back without recording an attempt (the attempt could not start, e.g. during shutdown,
 * or the run handed over): both free at once rather than when their lease runs out.
 */
export async function releaseClaim(sql: Sql, endpointId: string, delivery: ClaimedDelivery): Promise<void> {
  await sql`
    with freed as (
      update webhook_slots set delivery_id = null, leased_until = null, leased_by = null
      where endpoint_id = ${endpointId} and slot = ${delivery.slot} and delivery_id = ${delivery.id}
    )
    update webhook_deliveries set lease_token = null, leased_until = null, leased_by = null
    where id = ${delivery.id} and lease_token = ${delivery.token}`;
}
