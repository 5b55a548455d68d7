/**
 * A company's quota of webhook endpoints (how many are active, how much concurrency they share) and the slot rows kept
 * in step with each endpoint's max_concurrency: the two go together, since each unit of concurrency is a slot row.
 */

import type { SqlOrTransaction } from "../../infra/db.ts";
import { ErrorBag, unprocessable } from "../../basics/errors.ts";

/**
 * What one company's webhook endpoints may hold: how many are active, and how much concurrency they share. Each
 * unit of max_concurrency is a slot row leased per delivery in flight, so the second bound is also the bound on the
 * company's slot rows (40 endpoints at 100 once made 4,080 rows in one go).
 */
export type EndpointQuota = { endpoints: number; concurrency: number };

/**
 * Refuses a change that would take the company past its quota. `endpointId` absent: one more endpoint becomes active
 * (created, or enabled again) with `maxConcurrency`; present: an endpoint changes its max_concurrency, which counts
 * only while it is active. 422, not 429: waiting does not help, disabling an endpoint or lowering a
 * max_concurrency does. The company row is locked for the rest of the transaction, so two requests at once cannot
 * both take the last place.
 */
export async function checkEndpointQuota(
  tx: SqlOrTransaction,
  companyId: string,
  quota: EndpointQuota,
  change: { endpointId?: string; maxConcurrency: number },
): Promise<void> {
  await tx`select 1 from companies where id = ${companyId} for update`;
  const [use] = await tx<
    { active: number; others: number; current: number | null; active_self: boolean; streams: number }[]
  >`
    select
      count(*) filter (where id is distinct from ${change.endpointId ?? null}::uuid)::int as active,
      coalesce(sum(max_concurrency) filter (where id is distinct from ${change.endpointId ?? null}::uuid), 0)::int
        as others,
      max(max_concurrency) filter (where id = ${change.endpointId ?? null}::uuid) as current,
      bool_or(id = ${change.endpointId ?? null}::uuid) as active_self,
      -- a pull stream counts as an endpoint, with no concurrency (docs/webhooks.md, "Pull streams")
      (select count(*)::int from webhook_streams where company_id = ${companyId}) as streams
    from webhook_endpoints where company_id = ${companyId} and status = 'active'`;
  if (change.endpointId === undefined && use.active + use.streams >= quota.endpoints) {
    throw unprocessable(
      `at most ${quota.endpoints} active endpoints per company, pull streams included: disable or delete one first`,
    );
  }
  // a disabled endpoint holds no slots; an unchanged or lowered value never needs room it does not have
  if (change.endpointId !== undefined && (!use.active_self || change.maxConcurrency <= (use.current ?? 0))) return;
  const room = quota.concurrency - use.others;
  if (change.maxConcurrency > room) {
    const errors = new ErrorBag();
    errors.add(
      "max_concurrency",
      room >= 1
        ? `must be less than or equal to ${room}: the company's active endpoints share ${quota.concurrency}`
        : `has no room left: the company's active endpoints share ${quota.concurrency}`,
    );
    errors.throwIfAny(422);
  }
}

/**
 * Slot rows follow the endpoints: max_concurrency of them for an active endpoint, none for a disabled one, numbered
 * from its slot base (0 for http, 1,000,000 for a broker, 2,000,000 for a batched endpoint: `endpoint_slot_base` in
 * sql/0049, whose slots the previous release never leases). Rows a lowered max_concurrency or a disable leaves over
 * are deleted unless a delivery holds them (its lease ends on its own; the claim never takes a slot past the limit).
 * Rows of another base (`batch` set or removed) are deleted even while held: the previous release would lease such a
 * row of a batched endpoint once its lease ran out. The attempt holding one still records; it hands nothing over
 * (record.ts), so the endpoint may have that attempt in flight beside the new range's for its duration.
 */
export async function fitSlots(tx: SqlOrTransaction, endpointIds: string[]) {
  if (endpointIds.length === 0) return;
  await tx`
    insert into webhook_slots (endpoint_id, slot)
    select e.id, endpoint_slot_base(e.transport, e.batch) + s
    from webhook_endpoints e cross join generate_series(0, e.max_concurrency - 1) s
    where e.id = any(${endpointIds}::uuid[]) and e.status = 'active'
    on conflict do nothing`;
  await tx`
    delete from webhook_slots s using webhook_endpoints e
    where e.id = s.endpoint_id and e.id = any(${endpointIds}::uuid[])
      and (s.slot < endpoint_slot_base(e.transport, e.batch) or s.slot >= endpoint_slot_base(e.transport, e.batch)
        + 1000000 or (s.slot >= endpoint_slot_base(e.transport, e.batch)
          + case when e.status = 'active' then e.max_concurrency else 0 end
        and (s.leased_until is null or s.leased_until < now())))`;
}
