/**
 * A claim whose answer was lost (it committed on a primary that went away with the connection): the worker gives its
 * lease back when its liveness session opens again, so a sequential endpoint goes on at once, while an attempt in
 * flight in the process keeps its lease (docs/production.md, "Leases whose claim went unanswered").
 */
import assert from "node:assert/strict";
import type { TransactionSql } from "../../domain/infra/db.ts";
import { emitEvent } from "../../domain/webhooks/outbox/events.ts";
import { leaseMsFor } from "../../domain/webhooks/engine/statements/lease.ts";
import { eventually, newCompany, setup, type TestContext } from "../support/helpers.ts";
import { createEndpoint } from "../support/endpoints.ts";
import { sleep, startReceiver } from "../support/webhook_receiver.ts";

/** Far below the lease a lost claim holds (the request timeout plus 30 s): what "at once" means here. */
const DELIVERED_WITHIN_MS = 5_000;

/** The liveness session of this test's worker process ends, as a failover ends it; resolves once it is open again. */
async function dropLiveness(ctx: TestContext) {
  const [{ pid }] = await ctx.sql<{ pid: number }[]>`
    select backend_pid as pid from worker_processes where id = ${ctx.deps.processId}`;
  await ctx.sql`select pg_terminate_backend(${pid})`;
  await eventually(
    "the liveness session open again",
    async () => {
      const [row] = await ctx.sql<{ pid: number }[]>`
      select backend_pid as pid from worker_processes where id = ${ctx.deps.processId}`;
      return row && row.pid !== pid;
    },
    5_000,
    20,
  );
}

/** What a claim of `record` on the endpoint's slot 0 under this process writes: a lease its drainers never saw. */
async function leaseAsIfClaimed(ctx: TestContext, tx: TransactionSql, record: { id: string; endpoint_id: string }) {
  const leaseMs = leaseMsFor(ctx.config.webhookTimeoutMs);
  const until = tx`now() + ${leaseMs} * interval '1 millisecond'`;
  await tx`update webhook_slots set delivery_id = ${record.id}, leased_until = ${until}, leased_by = ${ctx.deps.processId}
    where endpoint_id = ${record.endpoint_id} and slot = 0`;
  await tx`update webhook_deliveries set lease_token = gen_random_uuid(), leased_until = ${until},
    leased_by = ${ctx.deps.processId} where id = ${record.id}`;
}

Deno.test("a lease taken by a claim whose answer was lost is given back when the liveness session opens again", async (t) => {
  const ctx = await setup("lost_claim", { worker: true, env: { WEBHOOK_TIMEOUT_MS: "10000" } });
  let hold = null as (() => void) | null;
  const rx = startReceiver(async (arrival) => {
    if (arrival.path === "/held" && hold === null) await new Promise<void>((r) => hold = r);
    return new Response("ok");
  });
  try {
    await t.step("a sequential endpoint delivers within seconds, not when the lease runs out", async () => {
      const company = await newCompany(ctx);
      const endpoint = await createEndpoint(company, `${rx.url}/lost`, { delivery_mode: "sequential" });
      // the event and, in the same transaction, the lease of a claim of its record: the wake-up at commit finds the
      // slot taken, as the drainer that made the claim and lost its answer did
      await ctx.sql.begin(async (tx) => {
        await emitEvent(tx, company.id, "identified", { transaction_id: crypto.randomUUID() });
        const [record] = await tx<{ id: string; endpoint_id: string }[]>`
          select id, endpoint_id from webhook_deliveries where endpoint_id = ${endpoint.id}`;
        await leaseAsIfClaimed(ctx, tx, record);
      });
      await emit(ctx, company.id);
      await sleep(1_000);
      assert.equal(rx.at("/lost").length, 0, "the lease holds the lane while the session lasts");

      const dropped = Date.now();
      await dropLiveness(ctx);
      await eventually("both records delivered", () => rx.at("/lost").length >= 2, DELIVERED_WITHIN_MS, 20);
      const ms = Date.now() - dropped;
      console.log(`delivered ${ms} ms after the liveness session was lost`);
      assert.equal(rx.at("/lost").length, 2, "each once");
      assert.equal(rx.maxInFlight("/lost"), 1);
    });

    await t.step("an attempt in flight keeps its lease: not sent twice, nor two at once", async () => {
      const company = await newCompany(ctx);
      const endpoint = await createEndpoint(company, `${rx.url}/held`, { delivery_mode: "sequential" });
      await emit(ctx, company.id);
      await eventually("the first attempt in flight", () => rx.at("/held").length === 1 && hold !== null);
      await emit(ctx, company.id);
      const leased = () =>
        ctx.sql<{ token: string | null }[]>`
          select lease_token as token from webhook_deliveries where endpoint_id = ${endpoint.id} order by id limit 1`;
      const [before] = await leased();
      await dropLiveness(ctx);
      await sleep(1_000); // time for the leases to be given back
      const [after] = await leased();
      assert.ok(before.token && after.token === before.token, "the attempt in flight still holds its record");
      assert.equal(rx.at("/held").length, 1, "nothing else sent meanwhile");
      hold!();
      await eventually("both delivered", () => rx.at("/held").length >= 2, DELIVERED_WITHIN_MS);
      await sleep(300);
      assert.equal(rx.at("/held").length, 2, "each once");
      assert.equal(rx.maxInFlight("/held"), 1);
    });
  } finally {
    hold?.(); // a step that failed early leaves no attempt waiting on the receiver
    await ctx.close();
    await rx.close();
  }
});

/** One more event for the company, in a transaction of its own. */
function emit(ctx: TestContext, companyId: string) {
  return ctx.sql.begin((tx) => emitEvent(tx, companyId, "identified", { transaction_id: crypto.randomUUID() }));
}
