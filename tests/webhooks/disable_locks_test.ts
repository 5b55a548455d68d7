/**
 * Disabling an endpoint while its attempt is being recorded: the disable must not deadlock with the record statement,
 * which holds the record and adds to the endpoint's stats rows (whose foreign key takes a key-share lock on the
 * endpoint). Both must go through, as an integrator's DELETE and a worker's attempt do (docs/webhooks.md).
 */
import assert from "node:assert/strict";
import { newCompany, setup } from "../support/helpers.ts";
import { createEndpoint, emit, ENDPOINTS } from "../support/endpoints.ts";
import { seqId } from "../support/webhook_receiver.ts";

Deno.test("a DELETE of an endpoint beside its attempt being recorded: both go through, neither deadlocks", async () => {
  const ctx = await setup("disable_locks");
  try {
    const company = await newCompany(ctx);
    const endpoint = await createEndpoint(company, "http://127.0.0.1:9/unused", { enabled_events: ["wire_created"] });
    await emit(ctx, company, "wire_created", { wire_id: seqId(1) });
    const [record] = await ctx.sql<{ id: string }[]>`
      select id from webhook_deliveries where endpoint_id = ${endpoint.id}`;
    let holding: () => void = () => {};
    const held = new Promise<void>((resolve) => holding = resolve);
    let release: () => void = () => {};
    const released = new Promise<void>((resolve) => release = resolve);
    // the record statement's order: the record first, then a stats row (its foreign key locks the endpoint key-share)
    const recording = ctx.sql.begin(async (tx) => {
      await tx`update webhook_deliveries set updated_at = now() where id = ${record.id}`;
      holding();
      await released;
      await tx`insert into webhook_endpoint_health (endpoint_id, shard, company_id, last_failure_at, last_failure_reason)
        values (${endpoint.id}, 0, ${company.id}, now(), 'HTTP 500')
        on conflict (endpoint_id, shard) do update set last_failure_at = excluded.last_failure_at`;
    });
    await held;
    const deleting = company.delete(`${ENDPOINTS}/${endpoint.id}`);
    // the DELETE has locked the endpoint and waits for the record; now the recording asks for its key-share lock
    await new Promise((r) => setTimeout(r, 300));
    release();
    const [recorded, deleted] = await Promise.allSettled([recording, deleting]);
    assert.equal(recorded.status, "fulfilled", recorded.status === "rejected" ? String(recorded.reason) : "");
    assert.equal(deleted.status === "fulfilled" && deleted.value.status, 200, JSON.stringify(deleted));
  } finally {
    await ctx.close();
  }
});
