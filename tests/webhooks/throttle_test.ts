/**
 * The per-endpoint delivery throttle as an integrator sees it (docs/webhooks.md, "Throttle"): rate_limit's bounds,
 * a rate held across two sets of drainers sharing the database, a sequential endpoint's order under it, a 429 with
 * Retry-After holding the whole endpoint, the backlog in the endpoint's stats, and an endpoint without a rate
 * delivered as before. A real receiver on loopback; arrivals are counted per second of the receiver's clock.
 */
import assert from "node:assert/strict";
import { emitEvent } from "../../domain/webhooks/outbox/events.ts";
import { companions, taskList } from "../../jobs/index.ts";
import { startWorker, stopWorker } from "../../domain/infra/worker.ts";
import { type Company, eventually, newCompany, setup } from "../support/helpers.ts";
import { createEndpoint, ENDPOINTS, recordsOf } from "../support/endpoints.ts";
import { type Arrival, seqId, seqOf, startReceiver } from "../support/webhook_receiver.ts";

/** The most arrivals in any window of `ms` starting at an arrival. */
function mostInWindow(arrivals: Arrival[], ms: number): number {
  const at = arrivals.map((a) => a.receivedAt).sort((a, b) => a - b);
  let most = 0;
  for (let i = 0; i < at.length; i++) {
    let n = 0;
    while (i + n < at.length && at[i + n] < at[i] + ms) n++;
    most = Math.max(most, n);
  }
  return most;
}

const span = (arrivals: Arrival[]) => arrivals.at(-1)!.receivedAt - arrivals[0].receivedAt;

Deno.test("per-endpoint delivery throttle, seen by an integrator", async (t) => {
  const ctx = await setup("webhook_throttle", { worker: true, env: { WEBHOOK_RETRY_SCHEDULE: "0.2" } });
  const answers = new Map<string, (n: number) => Response>();
  const rx = startReceiver((a, n) => answers.get(a.path)?.(n) ?? new Response("ok"));
  const emitMany = (company: Company, count: number) =>
    ctx.sql.begin(async (tx) => {
      for (let seq = 1; seq <= count; seq++) {
        await emitEvent(tx, company.id, "identified", { transaction_id: seqId(seq) });
      }
    });
  const stats = async (company: Company, id: string) =>
    (await company.get(`${ENDPOINTS}/${id}/stats`)).body.data.throttle;
  const allSucceeded = (company: Company, id: string) =>
    eventually("all succeeded", async () => (await recordsOf(company, id)).every((r) => r.status === "succeeded"));

  try {
    await t.step("rate_limit: deliveries per second, fractional allowed, bounded, null removes it", async () => {
      const company = await newCompany(ctx);
      for (const bad of [0, -1, 1001, "5"]) {
        const res = await company.post(ENDPOINTS, { url: `${rx.url}/bad`, rate_limit: bad });
        assert.equal(res.status, 422, JSON.stringify(bad));
        assert.ok(JSON.stringify(res.body.errors).includes("rate_limit"), JSON.stringify(res.body));
      }
      const ep = await createEndpoint(company, `${rx.url}/bounds`, { rate_limit: 0.5 });
      assert.equal(ep.rate_limit, 0.5);
      const kept = await company.put(`${ENDPOINTS}/${ep.id}`, { enabled_events: ["*"] });
      assert.equal(kept.body.data.rate_limit, 0.5, "absent on update: unchanged");
      const cleared = await company.put(`${ENDPOINTS}/${ep.id}`, { rate_limit: null });
      assert.equal(cleared.status, 200);
      assert.equal(cleared.body.data.rate_limit, null);
      const none = await createEndpoint(company, `${rx.url}/none`);
      assert.equal(none.rate_limit, null);
    });

    await t.step(
      "5 per second over 20 deliveries across two drainer sets: about 4 s, never 13 in two seconds",
      async () => {
        const second = await startWorker(ctx.url, 8, taskList(ctx.deps), {
          companions: companions({ ...ctx.deps, processId: crypto.randomUUID() }),
        });
        try {
          const company = await newCompany(ctx);
          const ep = await createEndpoint(company, `${rx.url}/rate`, { rate_limit: 5, max_concurrency: 5 });
          await emitMany(company, 20);
          const backlog = await eventually("the backlog shown", async () => {
            const s = await stats(company, ep.id);
            return s.throttled_until !== null && s.pending > 0 && s;
          });
          assert.equal(backlog.rate_limit, 5);
          await eventually("20 arrivals", () => rx.at("/rate").length === 20, 20_000);
          const arrivals = rx.at("/rate");
          // the 20th turn comes 19 intervals of 200 ms after the first, less the catch-up of the first (throttle_turn.ts)
          assert.ok(span(arrivals) >= 3_600, `20 arrivals in ${span(arrivals)} ms`);
          assert.ok(span(arrivals) < 12_000, `20 arrivals in ${span(arrivals)} ms`);
          // turns are taken at claim time, at most rate + 1 in any second (throttle_turn.ts); an arrival's time adds the
          // send's jitter, which a loaded machine makes tens of milliseconds: over two seconds, 2 × 5 + 1, and 1 for it
          const most = mostInWindow(arrivals, 2_000);
          assert.ok(most <= 12, `${most} arrivals in two seconds`);
          assert.deepEqual(
            arrivals.map((a) => seqOf(a.body.data.transaction_id)).sort((a, b) => a - b),
            Array.from({ length: 20 }, (_, i) => i + 1),
          );
          await allSucceeded(company, ep.id);
          const after = await stats(company, ep.id);
          assert.equal(after.pending, 0);
        } finally {
          await stopWorker(second);
        }
      },
    );

    await t.step("a throttled sequential endpoint keeps event order", async () => {
      const company = await newCompany(ctx);
      const ep = await createEndpoint(company, `${rx.url}/seq`, { rate_limit: 10, delivery_mode: "sequential" });
      await emitMany(company, 8);
      await eventually("8 arrivals", () => rx.at("/seq").length === 8, 15_000);
      const arrivals = rx.at("/seq");
      assert.deepEqual(arrivals.map((a) => seqOf(a.body.data.transaction_id)), [1, 2, 3, 4, 5, 6, 7, 8]);
      // 7 intervals of 100 ms, less the catch-up of the first (50 ms, throttle_turn.ts)
      assert.ok(span(arrivals) >= 600, `8 arrivals in ${span(arrivals)} ms`);
      assert.equal(rx.maxInFlight("/seq"), 1);
      await allSucceeded(company, ep.id);
    });

    await t.step("a 429 with Retry-After: 2 holds the endpoint's other deliveries too; a 500 does not", async () => {
      const company = await newCompany(ctx);
      // one slot: the second delivery is the next thing the endpoint does after the first's answer
      answers.set(
        "/busy",
        (n) =>
          n === 1 ? new Response("slow down", { status: 429, headers: { "retry-after": "2" } }) : new Response("ok"),
      );
      answers.set("/broken", (n) => n === 1 ? new Response("oops", { status: 500 }) : new Response("ok"));
      const busy = await createEndpoint(company, `${rx.url}/busy`, { max_concurrency: 1 });
      await createEndpoint(company, `${rx.url}/broken`, { max_concurrency: 1 });
      await emitMany(company, 3);
      await eventually("the 429", () => rx.at("/busy").length >= 1);
      const held = await eventually("the hold shown", async () => {
        const s = await stats(company, busy.id);
        return s.throttled_until !== null && s;
      });
      assert.equal(held.rate_limit, null);
      assert.ok(held.pending >= 2, JSON.stringify(held));
      await eventually(
        "every delivery made",
        () => rx.at("/busy").length === 4 && rx.at("/broken").length === 4,
        15_000,
      );
      const [first, second] = rx.at("/busy");
      assert.ok(second.receivedAt - first.receivedAt >= 1_900, `${second.receivedAt - first.receivedAt} ms`);
      const [failed, next] = rx.at("/broken");
      assert.ok(next.receivedAt - failed.receivedAt < 1_500, `${next.receivedAt - failed.receivedAt} ms`);
      await allSucceeded(company, busy.id);
      assert.equal((await stats(company, busy.id)).throttled_until, null);
    });

    await t.step("an endpoint without rate_limit is not throttled", async () => {
      const company = await newCompany(ctx);
      const ep = await createEndpoint(company, `${rx.url}/free`, { max_concurrency: 5 });
      await emitMany(company, 20);
      await eventually("20 arrivals", () => rx.at("/free").length === 20, 15_000);
      // 5 per second would take 4 s
      assert.ok(span(rx.at("/free")) < 3_000, `20 arrivals in ${span(rx.at("/free"))} ms`);
      await allSucceeded(company, ep.id);
      assert.deepEqual(await stats(company, ep.id), { rate_limit: null, throttled_until: null, pending: 0 });
    });
  } finally {
    await rx.close();
    await ctx.close();
  }
});
