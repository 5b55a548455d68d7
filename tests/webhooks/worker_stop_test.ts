/**
 * A worker stopped mid-delivery loses nothing and leaves no lease stuck: the next worker delivers the rest once
 * each, a sequential endpoint in order.
 */
import assert from "node:assert/strict";
import { startWorker, stopWorker, type Worker } from "../../domain/infra/worker.ts";
import { taskList, upkeep } from "../../jobs/index.ts";
import { eventually, newCompany, setup, type TestContext } from "../support/helpers.ts";
import { createEndpoint, emit } from "../support/endpoints.ts";
import { sleep, startReceiver } from "../support/webhook_receiver.ts";

/** What a stopped worker could have left behind: leased slots and records, locked jobs. */
async function leftBehind(ctx: TestContext) {
  const [row] = await ctx.sql<{ slots: number; records: number; jobs: number }[]>`
    select
      (select count(*) from webhook_slots where delivery_id is not null or leased_until is not null)::int as slots,
      (select count(*) from webhook_deliveries where leased_until is not null or lease_token is not null)::int
        as records,
      (select count(*) from graphile_worker.jobs where locked_at is not null)::int as jobs`;
  return { ...row };
}

Deno.test("a worker stopping mid-delivery loses nothing and leaves nothing stuck", async () => {
  const ctx = await setup("worker_stop");
  // Every answer takes a while, so the stop comes with requests in flight.
  const rx = startReceiver(async () => {
    await sleep(800);
    return new Response("ok");
  });
  const company = await newCompany(ctx);
  const parallel = await createEndpoint(company, `${rx.url}/par`, { max_concurrency: 3 });
  const sequential = await createEndpoint(company, `${rx.url}/seq`, { delivery_mode: "sequential" });
  const emitted: string[] = [];
  for (let i = 0; i < 6; i++) {
    const transactionId = crypto.randomUUID();
    emitted.push(transactionId);
    await emit(ctx, company, "identified", { transaction_id: transactionId });
  }
  let worker: Worker | null = null;
  try {
    worker = await startWorker(ctx.url, ctx.config.workerConcurrency, taskList(ctx.deps), upkeep(ctx.deps));
    await eventually(
      "requests in flight to both endpoints",
      () => rx.at("/par").length > 0 && rx.at("/seq").length > 0,
    );
    const first = worker;
    worker = null;
    await stopWorker(first);

    // Nothing stuck: every lease given back, no job locked, the process gone from the registry.
    assert.deepEqual(await leftBehind(ctx), { slots: 0, records: 0, jobs: 0 });
    const [{ registered }] = await ctx.sql<{ registered: number }[]>`
      select count(*)::int as registered from worker_processes where id = ${ctx.deps.processId}`;
    assert.equal(registered, 0);
    // Nothing lost: every attempt made was stored, no record failed for it, what was not sent waits, unleased.
    const [counts] = await ctx.sql<{ attempts: number; failed: number; pending: number }[]>`
      select (select count(*) from webhook_attempts)::int as attempts,
        count(*) filter (where status = 'failed')::int as failed,
        count(*) filter (where status = 'pending')::int as pending
      from webhook_deliveries`;
    assert.equal(counts.attempts, rx.arrivals.length, "each arrival is a stored attempt");
    assert.equal(counts.failed, 0);
    assert.ok(counts.pending > 0, "the stop came before the end of the backlog");

    // Another worker takes over and delivers the rest, once each, the sequential endpoint in order.
    worker = await startWorker(ctx.url, ctx.config.workerConcurrency, taskList(ctx.deps), upkeep(ctx.deps));
    await eventually("every record succeeded", async () => {
      const [{ left }] = await ctx.sql<{ left: number }[]>`
        select count(*)::int as left from webhook_deliveries where status <> 'succeeded'`;
      return left === 0;
    }, 30_000);
    for (const endpoint of [parallel, sequential]) {
      const [{ records }] = await ctx.sql<{ records: number }[]>`
        select count(*)::int as records from webhook_deliveries where endpoint_id = ${endpoint.id}`;
      assert.equal(records, 6);
    }
    const received = (path: string) => rx.at(path).map((a) => a.body.data.transaction_id);
    assert.deepEqual(received("/seq"), emitted, "in event order, none twice");
    assert.deepEqual([...received("/par")].sort(), [...emitted].sort(), "each once");
    assert.ok(rx.maxInFlight("/seq") === 1 && rx.maxInFlight("/par") <= 3);
  } finally {
    if (worker) await stopWorker(worker);
    await rx.close();
    await ctx.close();
  }
});
