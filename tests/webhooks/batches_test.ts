/**
 * Batches as an integrator meets them (docs/webhooks.md, "Batches"): a real receiver gets arrays of bodies signed once
 * (verified with the standardwebhooks package), full batches at once and the rest after max_wait_ms, the same batch
 * with the same id across a retry, order across a sequential endpoint's batches, acknowledge and retry of a whole
 * batch, the request counts of the stats, and the 422s. Then the guard for rolling deploys: the previous release's
 * slot statements never lease a batched endpoint's slot.
 */
import assert from "node:assert/strict";
import { Webhook } from "standardwebhooks";
import { emitEvent } from "../../domain/webhooks/outbox/events.ts";
import { DEFERRED_UNTIL } from "../../domain/webhooks/outbox/filter_deferrals.ts";
import { companions, taskList } from "../../jobs/index.ts";
import { startWorker, stopWorker } from "../../domain/infra/worker.ts";
import { type Company, eventually, newCompany, setup } from "../support/helpers.ts";
import { createEndpoint, ENDPOINTS, EVENTS } from "../support/endpoints.ts";
import { type Arrival, seqId, seqOf, startReceiver } from "../support/webhook_receiver.ts";

const headersOf = (a: Arrival) => Object.fromEntries(a.headers);
/** The transaction ids a batch carried, in its order. */
const seqsOf = (a: Arrival) =>
  (a.body as { data: { transaction_id: string } }[]).map((b) => seqOf(b.data.transaction_id));

Deno.test("batches: arrays signed once, a unit across retries, in order, one request counted", async (t) => {
  const ctx = await setup("batches", { worker: true, env: { WEBHOOK_RETRY_SCHEDULE: "0.05" } });
  // /flaky fails its first request; /held fails until told otherwise; /busy answers its first 429 Retry-After: 1
  let holding = true;
  const rx = startReceiver((a, n) =>
    a.path === "/busy" && n === 1
      ? new Response("slow down", { status: 429, headers: { "retry-after": "1" } })
      : new Response(`${n}`, {
        status: (a.path === "/flaky" || a.path === "/seq") && n === 1 || a.path === "/held" && holding ? 500 : 200,
      })
  );
  const emitMany = (company: Company, from: number, count: number) =>
    ctx.sql.begin(async (tx) => {
      for (let i = 0; i < count; i++) {
        await emitEvent(tx, company.id, "identified", { transaction_id: seqId(from + i) });
      }
    });
  const records = async (company: Company, endpointId: string) =>
    (await company.get(`${EVENTS}?endpoint_id=${endpointId}&order_by=asc&per_page=100`)).body.data as {
      id: string;
      status: string;
      attempts_count: number;
      batch_id: string | null;
    }[];

  try {
    await t.step(
      "a 429 with Retry-After holds the whole batched endpoint, not only the batch it answered",
      async () => {
        const company = await newCompany(ctx);
        const { id } = await createEndpoint(company, `${rx.url}/busy`, { batch: { max_events: 2, max_wait_ms: 0 } });
        await emitMany(company, 1, 2);
        await eventually("the first batch, answered 429", () => rx.at("/busy").length >= 1);
        const answeredAt = rx.at("/busy")[0].receivedAt;
        // the hold starts when the service has the answer: a batch claimed before that could not have known of it
        await eventually(
          "the 429 recorded",
          async () => (await records(company, id)).some((r) => r.attempts_count >= 1),
        );
        await emitMany(company, 3, 2);
        await eventually("both batches delivered", () => rx.at("/busy").length >= 3, 10_000);
        // nothing of the endpoint went before the second the receiver asked for had passed
        for (const a of rx.at("/busy").slice(1)) {
          assert.ok(a.receivedAt - answeredAt >= 950, `a request ${a.receivedAt - answeredAt} ms after the 429`);
        }
      },
    );

    await t.step("10 events with max_events 4 arrive as 4, 4 and then 2 after max_wait_ms, each verified", async () => {
      const company = await newCompany(ctx);
      const { id, secret } = await createEndpoint(company, `${rx.url}/ten`, {
        batch: { max_events: 4, max_wait_ms: 400 },
      });
      const emittedAt = Date.now();
      await emitMany(company, 1, 10);
      await eventually("3 requests", () => rx.at("/ten").length >= 3);
      const arrivals = rx.at("/ten");
      assert.deepEqual(arrivals.map((a) => a.body.length), [4, 4, 2]);
      // the partial batch waited for its oldest event's max_wait_ms, not for a poll
      assert.ok(arrivals[2].receivedAt - emittedAt >= 400, `${arrivals[2].receivedAt - emittedAt} ms`);
      assert.ok(arrivals[1].receivedAt - emittedAt < 400, `${arrivals[1].receivedAt - emittedAt} ms`);
      const wh = new Webhook(secret, { format: "raw" });
      for (const a of arrivals) {
        assert.deepEqual(wh.verify(a.raw, headersOf(a)), a.body);
        assert.equal(a.headers.get("webhook-batch-size"), String(a.body.length));
        assert.ok(a.signature?.startsWith("t="), "service-signature is sent too");
        const seqs = seqsOf(a);
        assert.deepEqual(seqs, [...seqs].sort((x, y) => x - y), "each array is in event order");
      }
      assert.deepEqual(arrivals.flatMap(seqsOf).sort((x, y) => x - y), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
      // webhook-id is the batch's id, which the records show
      // (a request arrives before its answer is recorded)
      const listed = await eventually("every record succeeded", async () => {
        const listed = await records(company, id);
        return listed.every((r) => r.status === "succeeded" && r.attempts_count === 1) && listed;
      });
      for (const a of arrivals) {
        const ids = (a.body as { id: string }[]).map((b) => b.id);
        const batchIds = new Set(listed.filter((r) => ids.includes(r.id)).map((r) => r.batch_id));
        assert.deepEqual([...batchIds], [a.headers.get("webhook-id")]);
      }
      // the detail shows the record's own body, and the batch's id as what its requests are signed under
      const detail = (await company.get(`${EVENTS}/${listed[0].id}`)).body.data;
      assert.equal(detail.batch_id, listed[0].batch_id);
      assert.equal(detail.request.headers["webhook-id"], listed[0].batch_id);
      assert.equal(JSON.parse(detail.request.body).id, listed[0].id);
      // the stats count events and requests
      const stats = (await company.get(`${ENDPOINTS}/${id}/stats`)).body.data;
      assert.equal(stats.attempts.total, 10);
      assert.deepEqual(stats.requests, { total: 3, batches: 3 });
    });

    await t.step("a failing receiver gets the same batch again, with the same id and contents", async () => {
      const company = await newCompany(ctx);
      const { id, secret } = await createEndpoint(company, `${rx.url}/flaky`, {
        batch: { max_events: 3, max_wait_ms: 0 },
        max_concurrency: 1,
      });
      await emitMany(company, 20, 3);
      await eventually("a retry", () => rx.at("/flaky").length >= 2);
      const [first, second] = rx.at("/flaky");
      assert.equal(first.headers.get("webhook-id"), second.headers.get("webhook-id"));
      assert.deepEqual(second.body, first.body);
      assert.equal(first.body.length, 3);
      assert.deepEqual(new Webhook(secret, { format: "raw" }).verify(second.raw, headersOf(second)), second.body);
      await eventually("records succeeded", async () => {
        const listed = await records(company, id);
        return listed.every((r) => r.status === "succeeded" && r.attempts_count === 2) &&
          listed.every((r) => r.batch_id === first.headers.get("webhook-id"));
      });
    });

    await t.step("a sequential batch endpoint sends one batch at a time, in order across batches", async () => {
      const company = await newCompany(ctx);
      await createEndpoint(company, `${rx.url}/seq`, {
        batch: { max_events: 3, max_wait_ms: 50 },
        delivery_mode: "sequential",
      });
      // events one at a time, as requests emit them: batches form as they come
      for (let i = 0; i < 8; i++) await emitMany(company, 40 + i, 1);
      await eventually("every event", () => new Set(rx.at("/seq").flatMap(seqsOf)).size === 8);
      const arrivals = rx.at("/seq");
      // the first request failed: the same batch went again before any later event
      assert.deepEqual(arrivals[1].body, arrivals[0].body);
      const sent = arrivals.slice(1).flatMap(seqsOf);
      assert.deepEqual(sent, [40, 41, 42, 43, 44, 45, 46, 47]);
      assert.equal(rx.maxInFlight("/seq"), 1);
    });

    await t.step(
      "a record waiting for its filter's verdict holds a sequential endpoint's batch behind it",
      async () => {
        const company = await newCompany(ctx);
        const { id } = await createEndpoint(company, `${rx.url}/deferred`, {
          batch: { max_events: 5, max_wait_ms: 200 },
          delivery_mode: "sequential",
        });
        await emitMany(company, 90, 2);
        // the second as a filter deferral leaves it (filter_deferrals.ts), before the partial batch's wait ends
        const [, second] = await records(company, id);
        await ctx.sql`update webhook_deliveries set next_attempt_at = ${DEFERRED_UNTIL} where id = ${second.id}`;
        await eventually("the first alone", () => rx.at("/deferred").length >= 1);
        assert.deepEqual(seqsOf(rx.at("/deferred")[0]), [90]);
        // its verdict: due now; the next event wakes the endpoint, and the rest go together, in order
        await ctx.sql`update webhook_deliveries set next_attempt_at = now() where id = ${second.id}`;
        await emitMany(company, 92, 1);
        await eventually("the rest", () => rx.at("/deferred").length >= 2);
        assert.deepEqual(rx.at("/deferred").slice(1).flatMap(seqsOf), [91, 92]);
      },
    );

    await t.step("acknowledging one record acknowledges its batch; retrying one retries the batch", async () => {
      const company = await newCompany(ctx);
      const held = await createEndpoint(company, `${rx.url}/held`, { batch: { max_events: 3, max_wait_ms: 0 } });
      await emitMany(company, 60, 3);
      await eventually("a first request", () => rx.at("/held").length >= 1);
      const [record] = await records(company, held.id);
      const acked = await company.put(`${EVENTS}/${record.id}/acknowledge`, {});
      assert.equal(acked.status, 200, JSON.stringify(acked.body));
      const listed = await records(company, held.id);
      assert.deepEqual(listed.map((r) => r.status), ["succeeded", "succeeded", "succeeded"]);
      assert.equal(new Set(listed.map((r) => r.batch_id)).size, 1);

      // another batch, failing on a long schedule: a retry of its last record sends all three at once
      const slow = await setup("batches_slow", { worker: true, env: { WEBHOOK_RETRY_SCHEDULE: "60" } });
      try {
        const other = await newCompany(slow);
        const ep = await createEndpoint(other, `${rx.url}/held`, { batch: { max_events: 3, max_wait_ms: 0 } });
        const before = rx.at("/held").length;
        await slow.sql.begin(async (tx) => {
          for (let i = 0; i < 3; i++) await emitEvent(tx, other.id, "identified", { transaction_id: seqId(70 + i) });
        });
        await eventually("its first request", () => rx.at("/held").length >= before + 1);
        holding = false;
        const mine = (await other.get(`${EVENTS}?endpoint_id=${ep.id}&order_by=asc`)).body.data;
        const retried = await other.post(`${EVENTS}/${mine[2].id}/retry`, {});
        assert.equal(retried.status, 200, JSON.stringify(retried.body));
        await eventually("the batch again", () => rx.at("/held").length >= before + 2);
        const [a, b] = rx.at("/held").slice(before);
        assert.equal(a.headers.get("webhook-id"), b.headers.get("webhook-id"));
        assert.deepEqual(seqsOf(b), [70, 71, 72]);
        await eventually(
          "all succeeded",
          async () =>
            (await other.get(`${EVENTS}?endpoint_id=${ep.id}`)).body.data.every((r: { status: string }) =>
              r.status === "succeeded"
            ),
        );
      } finally {
        await slow.close();
      }
    });

    await t.step("two sets of drainers split no batch and send no event twice", async () => {
      const company = await newCompany(ctx);
      const { id } = await createEndpoint(company, `${rx.url}/two`, {
        batch: { max_events: 5, max_wait_ms: 100 },
        max_concurrency: 3,
      });
      const second = await startWorker(ctx.url, 8, taskList(ctx.deps), {
        companions: companions({ ...ctx.deps, processId: crypto.randomUUID() }),
      });
      try {
        for (let i = 0; i < 6; i++) await emitMany(company, 100 + i * 10, 10);
        await eventually("60 events", () => rx.at("/two").flatMap(seqsOf).length >= 60);
      } finally {
        await stopWorker(second);
      }
      const arrivals = rx.at("/two");
      const seqs = arrivals.flatMap(seqsOf);
      assert.equal(seqs.length, 60, "no event twice");
      assert.equal(new Set(seqs).size, 60);
      assert.ok(arrivals.every((a) => a.body.length <= 5));
      assert.ok(rx.maxInFlight("/two") <= 3, `${rx.maxInFlight("/two")} in flight`);
      // every request is one batch, as its records say
      const listed = await records(company, id);
      const batchOf = new Map(listed.map((r) => [r.id, r.batch_id]));
      for (const a of arrivals) {
        const ids = (a.body as { id: string }[]).map((b) => batchOf.get(b.id));
        assert.deepEqual(new Set(ids), new Set([a.headers.get("webhook-id")]));
      }
    });

    await t.step("batch is refused beside the settings that read one event a request, and bounded", async () => {
      const company = await newCompany(ctx);
      const batch = { max_events: 10, max_wait_ms: 100 };
      for (
        const settings of [
          { wrap_in_notification: true },
          { inject_secret_in_body: true },
          { rate_limit: 5 },
        ]
      ) {
        const res = await company.post(ENDPOINTS, { url: `${rx.url}/refused`, batch, ...settings });
        assert.equal(res.status, 422, JSON.stringify(res.body));
        assert.ok(res.body.errors.batch, JSON.stringify(res.body));
      }
      const broker = await company.post(ENDPOINTS, {
        url: "amqp://127.0.0.1:5672/%2F",
        destination: { exchange: "x", routing_key: "k" },
        batch,
      });
      assert.equal(broker.status, 422);
      assert.match(broker.body.errors.batch[0], /only for an https url/);
      for (const bad of [{ max_events: 1, max_wait_ms: 0 }, { max_events: 101, max_wait_ms: 0 }, { max_wait_ms: -1 }]) {
        const res = await company.post(ENDPOINTS, { url: `${rx.url}/refused`, batch: { max_events: 5, ...bad } });
        assert.equal(res.status, 422, JSON.stringify(res.body));
        assert.ok(res.body.errors.batch, JSON.stringify(res.body));
      }
      // a key left out is a 400, as every required field is
      const missing = await company.post(ENDPOINTS, { url: `${rx.url}/refused`, batch: { max_events: 5 } });
      assert.equal(missing.status, 400);
      assert.deepEqual(missing.body.errors, { batch: { max_wait_ms: ["can't be blank"] } });
      // an update that would put a batched endpoint beside wrap_in_notification is refused too
      const made = await createEndpoint(company, `${rx.url}/refused`, { batch });
      assert.deepEqual(made.batch, batch);
      const wrap = await company.put(`${ENDPOINTS}/${made.id}`, { wrap_in_notification: true });
      assert.equal(wrap.status, 422);
      assert.ok(wrap.body.errors.batch);
      // null removes it; then wrap_in_notification is fine
      const removed = await company.put(`${ENDPOINTS}/${made.id}`, { batch: null, wrap_in_notification: true });
      assert.equal(removed.status, 200, JSON.stringify(removed.body));
      assert.equal(removed.body.data.batch, null);
    });

    await t.step("the previous release's slot statements never lease a batched endpoint's slot", async () => {
      const company = await newCompany(ctx);
      const made = await createEndpoint(company, `${rx.url}/slots`, { max_concurrency: 3 });
      const id = made.id;
      const slots = async () =>
        (await ctx.sql`select slot from webhook_slots where endpoint_id = ${id} order by slot`).map((r) => r.slot);
      assert.deepEqual(await slots(), [0, 1, 2]);
      // a slot held by an attempt in flight when the batch is set: moved all the same
      await ctx.sql`update webhook_slots set leased_until = now() + interval '1 minute' where endpoint_id = ${id}
        and slot = 1`;
      const set = await company.put(`${ENDPOINTS}/${id}`, { batch: { max_events: 5, max_wait_ms: 10_000 } });
      assert.equal(set.status, 200, JSON.stringify(set.body));
      assert.deepEqual(await slots(), [2_000_000, 2_000_001, 2_000_002]);
      // 1.3.0's fitSlots (git show d7666a3:domain/webhooks/endpoints/quotas.ts), as it runs on an update or enable
      await ctx.sql`
        insert into webhook_slots (endpoint_id, slot)
        select e.id, s from webhook_endpoints e cross join generate_series(0, e.max_concurrency - 1) s
        where e.id = any(${[id]}::uuid[]) and e.status = 'active'
        on conflict do nothing`;
      await ctx.sql`
        delete from webhook_slots s using webhook_endpoints e
        where e.id = s.endpoint_id and e.id = any(${[id]}::uuid[])
          and s.slot >= case when e.status = 'active' then e.max_concurrency else 0 end
          and (s.leased_until is null or s.leased_until < now())`;
      assert.deepEqual(await slots(), [2_000_000, 2_000_001, 2_000_002]);
      // 1.3.0's claim (git show d7666a3:domain/webhooks/engine/statements/claim.ts), its free slot: none, with a
      // record due (which waits for its batch's max_wait_ms)
      await emitMany(company, 80, 1);
      const [free] = await ctx.sql`
        with ep as (
          select * from webhook_endpoints where id = ${id}
        )
        select s.slot from webhook_slots s
        where s.endpoint_id = ${id}
          and s.slot < (select endpoint_slot_limit(ep.status, ep.delivery_mode, ep.max_concurrency) from ep)
          and lease_is_free(s.leased_until)
        order by s.slot limit 1
        for update skip locked`;
      assert.equal(free, undefined);
      // removing the batch moves them back, where both releases lease them
      const removed = await company.put(`${ENDPOINTS}/${id}`, { batch: null });
      assert.equal(removed.status, 200);
      assert.deepEqual(await slots(), [0, 1, 2]);
      await eventually("the record delivered alone", () => rx.at("/slots").length === 1);
      assert.equal(rx.at("/slots")[0].headers.get("webhook-batch-size"), null);
      // a disable and an enable keep the batched range
      await company.put(`${ENDPOINTS}/${id}`, { batch: { max_events: 2, max_wait_ms: 0 } });
      assert.equal((await company.delete(`${ENDPOINTS}/${id}`)).status, 200);
      assert.deepEqual(await slots(), []);
      assert.equal((await company.post(`${ENDPOINTS}/${id}/enable`, {})).status, 200);
      assert.deepEqual(await slots(), [2_000_000, 2_000_001, 2_000_002]);
    });
  } finally {
    await rx.close();
    await ctx.close();
  }
});
