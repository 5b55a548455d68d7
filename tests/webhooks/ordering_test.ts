/**
 * Per-endpoint order and concurrency: sequential endpoints one at a time in event order, parallel ones within
 * max_concurrency across processes, and acknowledgement of a failing head.
 */
import assert from "node:assert/strict";
import { emitEvent } from "../../domain/webhooks/outbox/events.ts";
import { companions, taskList } from "../../jobs/index.ts";
import { startWorker, stopWorker } from "../../domain/infra/worker.ts";
import { type Company, eventually, newCompany, setup } from "../support/helpers.ts";
import { createEndpoint, EVENTS, recordsOf } from "../support/endpoints.ts";
import { type Arrival, seqId, seqOf, sleep, startReceiver } from "../support/webhook_receiver.ts";

/** Which arrivals fail: by path, the sequence number in the event data (seqOf its transaction_id) and how many times it fails. */
const failing = new Map<string, Map<number, number>>();
const slowMs = new Map<string, number>();

Deno.test("webhook ordering, concurrency and acknowledgement", async (t) => {
  const ctx = await setup("webhook_ordering", { worker: true, env: { WEBHOOK_RETRY_SCHEDULE: "0.5" } });
  const seen = new Map<string, number>();
  const rx = startReceiver(async (a: Arrival) => {
    const delay = slowMs.get(a.path);
    if (delay) await sleep(delay);
    const seq = seqOf(a.body?.data?.transaction_id);
    const key = `${a.path}#${seq}`;
    const n = (seen.get(key) ?? 0) + 1;
    seen.set(key, n);
    const fails = failing.get(a.path)?.get(seq) ?? 0;
    return new Response(null, { status: n <= fails ? 500 : 204 });
  });
  const emitSeq = (company: Company, from: number, to: number) =>
    ctx.sql.begin(async (tx) => {
      for (let seq = from; seq <= to; seq++) {
        await emitEvent(tx, company.id, "identified", { transaction_id: seqId(seq) });
      }
    });
  const seqsAt = (path: string) => rx.at(path).map((a) => seqOf(a.body.data.transaction_id));

  await t.step("sequential: one at a time in event order; a failing delivery holds the ones behind it", async () => {
    const company = await newCompany(ctx);
    failing.set("/seq", new Map([[1, 2], [3, 1]]));
    slowMs.set("/seq", 20);
    const endpoint = await createEndpoint(company, `${rx.url}/seq`, { delivery_mode: "sequential" });
    await emitSeq(company, 1, 3); // one transaction: the same run_at for all
    for (let seq = 4; seq <= 6; seq++) await emitSeq(company, seq, seq);
    await eventually("six successes", () => rx.at("/seq").length === 9, 20_000);
    assert.deepEqual(seqsAt("/seq"), [1, 1, 1, 2, 3, 3, 4, 5, 6]);
    assert.equal(rx.maxInFlight("/seq"), 1);
    await eventually(
      "all succeeded",
      async () => (await recordsOf(company, endpoint.id)).every((r: { status: string }) => r.status === "succeeded"),
    );
  });

  await t.step("parallel: never more than max_concurrency in flight, across worker processes", async () => {
    const second = await startWorker(ctx.url, 8, taskList(ctx.deps), { companions: companions(ctx.deps) });
    try {
      const company = await newCompany(ctx);
      slowMs.set("/par", 100);
      const endpoint = await createEndpoint(company, `${rx.url}/par`, { max_concurrency: 3 });
      await emitSeq(company, 1, 12);
      for (let seq = 13; seq <= 18; seq++) await emitSeq(company, seq, seq);
      await eventually("18 arrivals", () => rx.at("/par").length === 18, 20_000);
      assert.ok(rx.maxInFlight("/par") <= 3, `max in flight ${rx.maxInFlight("/par")}`);
      assert.ok(rx.maxInFlight("/par") > 1, "deliveries ran in parallel");
      assert.deepEqual(seqsAt("/par").sort((a, b) => a - b), Array.from({ length: 18 }, (_, i) => i + 1));
      await eventually(
        "all succeeded",
        async () => (await recordsOf(company, endpoint.id)).every((r: { status: string }) => r.status === "succeeded"),
      );
    } finally {
      await stopWorker(second);
    }
  });

  await t.step("max_concurrency 1 on a parallel endpoint means one at a time", async () => {
    const company = await newCompany(ctx);
    slowMs.set("/one", 30);
    await createEndpoint(company, `${rx.url}/one`, { max_concurrency: 1 });
    await emitSeq(company, 1, 5);
    await eventually("5 arrivals", () => rx.at("/one").length === 5);
    assert.equal(rx.maxInFlight("/one"), 1);
  });

  await t.step("acknowledge marks a failing record succeeded and cancels what was queued", async () => {
    const company = await newCompany(ctx);
    failing.set("/ack", new Map([[1, Infinity]]));
    const endpoint = await createEndpoint(company, `${rx.url}/ack`);
    await emitSeq(company, 1, 1);
    const [record] = await recordsOf(company, endpoint.id);
    await eventually("a first failed attempt", () => rx.at("/ack").length === 1);
    const res = await company.put(`${EVENTS}/${record.id}/acknowledge`);
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { data: { id: record.id, status: "succeeded" } });
    await sleep(1200); // past the next scheduled attempt
    assert.equal(rx.at("/ack").length, 1);
    const detail = (await company.get(`${EVENTS}/${record.id}`)).body.data;
    assert.equal(detail.status, "succeeded");
    assert.equal(detail.attempts.length, 1);
    assert.equal(detail.attempts[0].http_status, 500);
  });

  await t.step("acknowledging the failing head of a sequential endpoint lets the rest through", async () => {
    const company = await newCompany(ctx);
    failing.set("/ack-seq", new Map([[1, Infinity]]));
    const endpoint = await createEndpoint(company, `${rx.url}/ack-seq`, { delivery_mode: "sequential" });
    await emitSeq(company, 1, 3);
    await eventually("the head's first attempt", () => rx.at("/ack-seq").length === 1);
    await sleep(100);
    assert.deepEqual(seqsAt("/ack-seq"), [1]);
    const [head] = await recordsOf(company, endpoint.id);
    assert.equal((await company.put(`${EVENTS}/${head.id}/acknowledge`)).status, 200);
    await eventually("the rest", () => rx.at("/ack-seq").length === 3);
    assert.deepEqual(seqsAt("/ack-seq"), [1, 2, 3]);
  });

  await t.step("a sequential head that fails for good releases the rest", async () => {
    const quick = await setup("webhook_ordering_quick", { worker: true, env: { WEBHOOK_RETRY_SCHEDULE: "0" } });
    try {
      const c = await newCompany(quick);
      failing.set("/give-up", new Map([[1, Infinity]]));
      const endpoint = await createEndpoint(c, `${rx.url}/give-up`, { delivery_mode: "sequential" });
      await quick.sql.begin(async (tx) => {
        for (const seq of [1, 2]) await emitEvent(tx, c.id, "identified", { transaction_id: seqId(seq) });
      });
      await eventually("ten attempts, then the next one", () => rx.at("/give-up").length === 11);
      assert.deepEqual(seqsAt("/give-up"), [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2]);
      const records = await eventually("settled", async () => {
        const r = await recordsOf(c, endpoint.id);
        return r.every((x: { status: string }) => x.status !== "pending") && r;
      });
      assert.deepEqual(records.map((r: { status: string }) => r.status), ["failed", "succeeded"]);
    } finally {
      await quick.close();
    }
  });

  await t.step("another company cannot acknowledge, retry or read a record", async () => {
    const owner = await newCompany(ctx);
    const stranger = await newCompany(ctx);
    const endpoint = await createEndpoint(owner, `${rx.url}/private`);
    await emitSeq(owner, 1, 1);
    const [record] = await recordsOf(owner, endpoint.id);
    for (
      const res of [
        await stranger.get(`${EVENTS}/${record.id}`),
        await stranger.put(`${EVENTS}/${record.id}/acknowledge`),
        await stranger.post(`${EVENTS}/${record.id}/retry`),
      ]
    ) {
      assert.equal(res.status, 404);
      assert.deepEqual(res.body, { errors: { detail: "Not Found" } });
    }
    assert.deepEqual((await stranger.get(`${EVENTS}?endpoint_id=${endpoint.id}`)).body, { data: [] });
  });

  await rx.close();
  await ctx.close();
});
