/**
 * Fair, bounded delivery under backlog: a backlog of events queues nothing but its records, and a sequential endpoint
 * behind it is served while it drains (docs/webhooks.md, "Fair delivery under backlog").
 */
import assert from "node:assert/strict";
import { emitEvent } from "../../domain/webhooks/outbox/events.ts";
import { startWorker, stopWorker, type Worker } from "../../domain/infra/worker.ts";
import { taskList, upkeep } from "../../jobs/index.ts";
import { type Company, eventually, newCompany, setup, type TestContext } from "../support/helpers.ts";
import { createEndpoint } from "../support/endpoints.ts";
import { sleep, startReceiver } from "../support/webhook_receiver.ts";

const BACKLOG = 1_500;

/** `total` events, one per transaction (as producers emit them), from `producers` at once. */
async function emitMany(ctx: TestContext, company: Company, total: number, producers = 8): Promise<string[]> {
  const ids: string[] = [];
  await Promise.all(Array.from({ length: producers }, async () => {
    while (ids.length < total) {
      const transactionId = crypto.randomUUID();
      ids.push(transactionId);
      await ctx.sql.begin((tx) => emitEvent(tx, company.id, "identified", { transaction_id: transactionId }));
    }
  }));
  return ids;
}

/** Every graphile-worker job that could carry a delivery: none since records are claimed from the table itself. */
function drainJobs(ctx: TestContext) {
  return ctx.sql<
    { key: string | null }[]
  >`select key from graphile_worker.jobs where task_identifier = 'deliver_webhook'`;
}

/** Slots and records of one endpoint still leased. */
async function leasesOf(ctx: TestContext, endpointId: string): Promise<number> {
  const [{ leased }] = await ctx.sql<{ leased: number }[]>`
    select (select count(*) from webhook_slots where endpoint_id = ${endpointId} and leased_until is not null)::int
      + (select count(*) from webhook_deliveries where endpoint_id = ${endpointId} and leased_until is not null)::int
      as leased`;
  return leased;
}

Deno.test("fair, bounded delivery under backlog", async (t) => {
  // A long retry schedule: records that fail stay pending with their retry due well after the test.
  const ctx = await setup("webhook_fairness", { env: { WEBHOOK_RETRY_SCHEDULE: "600", WORKER_CONCURRENCY: "6" } });
  // The parallel receiver takes a few milliseconds per request, so its backlog takes seconds to drain.
  const rx = startReceiver(async (a) => {
    if (a.path === "/busy") await sleep(4);
    if (a.path === "/down") return new Response("down for maintenance", { status: 500 });
    return new Response("ok");
  });
  let worker: Worker | null = null;
  const busy = await newCompany(ctx);
  const quiet = await newCompany(ctx);
  const busyEndpoint = await createEndpoint(busy, `${rx.url}/busy`, { max_concurrency: 8 });
  const quietEndpoint = await createEndpoint(quiet, `${rx.url}/quiet`, { delivery_mode: "sequential" });

  try {
    await t.step("a backlog of 1,500 events queues nothing but its records: no job per event or lane", async () => {
      await emitMany(ctx, busy, BACKLOG);
      assert.deepEqual([...await drainJobs(ctx)], [], "no job carries a delivery");
      const [{ pending }] = await ctx.sql<{ pending: number }[]>`
        select count(*)::int as pending from webhook_deliveries where endpoint_id = ${busyEndpoint.id}
          and status = 'pending' and leased_until is null`;
      assert.equal(pending, BACKLOG, "every record waits in webhook_deliveries, unleased");
    });

    await t.step("a sequential endpoint queued behind that backlog is served while the backlog drains", async () => {
      const emitted = await emitMany(ctx, quiet, 10, 1);
      worker = await startWorker(ctx.url, ctx.config.workerConcurrency, taskList(ctx.deps), upkeep(ctx.deps));
      await eventually("the sequential endpoint's 10 deliveries", () => rx.at("/quiet").length >= 10, 20_000, 10);
      const busyDone = rx.at("/busy").length;
      assert.ok(busyDone < BACKLOG / 2, `the quiet endpoint waited for ${busyDone} of ${BACKLOG} busy deliveries`);
      assert.deepEqual(
        rx.at("/quiet").map((a) => a.body.data.transaction_id),
        emitted,
        "in event order",
      );
      await eventually("the busy backlog drained", () => rx.at("/busy").length >= BACKLOG, 60_000, 50);
      assert.ok(rx.maxInFlight("/busy") <= 8, "never more than max_concurrency in flight");
      assert.ok(rx.maxInFlight("/busy") > 1, "the backlog fanned out over the endpoint's slots");
      await eventually("no job and no lease left behind once both are drained", async () => {
        const left = (await drainJobs(ctx)).length + await leasesOf(ctx, quietEndpoint.id) +
          await leasesOf(ctx, busyEndpoint.id);
        return left === 0;
      });
    });

    await t.step(
      "the failing records of an endpoint wait for their own retry time, nothing queued for them",
      async () => {
        const failing = await newCompany(ctx);
        const down = await createEndpoint(failing, `${rx.url}/down`, { max_concurrency: 3 });
        await emitMany(ctx, failing, 30);
        const attempted = await eventually("30 first attempts recorded", async () => {
          const rows = await ctx.sql<{ next_attempt_at: Date }[]>`
          select next_attempt_at from webhook_deliveries
          where endpoint_id = ${down.id} and status = 'pending' and attempts = 1 order by next_attempt_at`;
          return rows.length === 30 ? [...rows] : null;
        }, 20_000);
        await eventually("nothing leased any more", async () => await leasesOf(ctx, down.id) === 0);
        assert.deepEqual([...await drainJobs(ctx)], [], "no job waits for the retries");
        assert.ok(attempted[0].next_attempt_at.getTime() > Date.now() + 500_000, "as far away as the schedule says");
        await sleep(1_500);
        const [{ attempts }] = await ctx.sql<{ attempts: number }[]>`
        select count(*)::int as attempts from webhook_attempts a join webhook_deliveries d on d.id = a.delivery_id
        where d.endpoint_id = ${down.id}`;
        assert.equal(attempts, 30, "nothing is attempted again before its retry time");
      },
    );
  } finally {
    if (worker) await stopWorker(worker);
    await rx.close();
    await ctx.close();
  }
});
