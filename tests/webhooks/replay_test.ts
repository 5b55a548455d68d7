/**
 * Replay after a disable (`include_skipped`, domain/webhooks/outbox/replay.ts): the events missed while disabled sent
 * once, in order, bounded by the window, the retention, the filter and the limit per call.
 */
import assert from "node:assert/strict";
import { v7 } from "uuid";
import { RECOVER_LOCK, recoverDeliveries } from "../../domain/webhooks/endpoints/deliveries.ts";
import { pruneHistory } from "../../domain/webhooks/endpoints/retention.ts";
import { verifySignature } from "../../domain/webhooks/endpoints/signature.ts";
import { type Company, eventually, newCompany, setup } from "../support/helpers.ts";
import { createEndpoint, emit, ENDPOINTS, recordsOf } from "../support/endpoints.ts";
import { seqId, seqOf, sleep, startReceiver } from "../support/webhook_receiver.ts";

/** Replay after disable: recover with include_skipped (docs/webhooks.md, "Replay what a disabled endpoint missed"). */
Deno.test("replay after disable: the events missed while disabled are sent once, in order", async (t) => {
  const ctx = await setup("webhook_replay", { worker: true, env: { WEBHOOK_RETRY_SCHEDULE: "0.02" } });
  const rx = startReceiver();
  const identified = (company: Company, seq: number) =>
    emit(ctx, company, "identified", { transaction_id: seqId(seq) });
  const seqsAt = (path: string, from = 0) => rx.at(path).slice(from).map((a) => seqOf(a.body.data.transaction_id));
  const allSucceeded = async (company: Company, endpointId: string, n: number) => {
    const records = await recordsOf(company, endpointId);
    return records.length === n && records.every((r) => r.status === "succeeded");
  };
  const since = new Date(Date.now() - 60_000).toISOString();

  try {
    await t.step("disabled, three events, enabled: recover with include_skipped sends those three", async () => {
      const company = await newCompany(ctx);
      const endpoint = await createEndpoint(company, `${rx.url}/story`, {
        delivery_mode: "sequential",
        enabled_events: ["identified", "wire_created"],
      });
      // another endpoint of the company, active throughout, and another company with an endpoint of its own
      const neighbour = await createEndpoint(company, `${rx.url}/neighbour`);
      const other = await newCompany(ctx);
      await createEndpoint(other, `${rx.url}/other`);

      await identified(company, 1);
      await eventually("the first event delivered", () => allSucceeded(company, endpoint.id, 1));
      assert.equal((await company.delete(`${ENDPOINTS}/${endpoint.id}`)).status, 200);

      for (let seq = 2; seq <= 4; seq++) await identified(company, seq);
      await emit(ctx, company, "payment_approved", { transaction_id: seqId(50) }); // a type it does not enable
      await identified(other, 90); // another company's
      const test = await company.post(`${ENDPOINTS}/${neighbour.id}/test`, { type: "identified" });
      assert.equal(test.status, 202, JSON.stringify(test.body)); // sent to the neighbour alone
      assert.equal((await recordsOf(company, endpoint.id)).length, 1, "no record while disabled");

      const refused = await company.post(`${ENDPOINTS}/${endpoint.id}/recover`, { since, include_skipped: true });
      assert.deepEqual([refused.status, refused.body], [422, { errors: { detail: "endpoint is disabled" } }]);
      const enabled = await company.post(`${ENDPOINTS}/${endpoint.id}/enable`);
      assert.equal(enabled.status, 200, JSON.stringify(enabled.body));
      const seen = rx.at("/story").length;

      const res = await company.post(`${ENDPOINTS}/${endpoint.id}/recover`, { since, include_skipped: true });
      assert.equal(res.status, 202, JSON.stringify(res.body));
      assert.deepEqual(res.body, {
        data: {
          endpoint_id: endpoint.id,
          deliveries: 3,
          failed: 0,
          failed_remaining: false,
          skipped: 3,
          skipped_remaining: false,
          skipped_after: null,
          skipped_deferred: 0,
        },
      });
      await identified(company, 5); // after the recover: a sequential endpoint takes it after the replayed ones
      await eventually("five records succeeded", () => allSucceeded(company, endpoint.id, 5));
      assert.deepEqual(seqsAt("/story", seen), [2, 3, 4, 5]);
      for (const arrival of rx.at("/story")) {
        assert.equal(await verifySignature(arrival.raw, arrival.signature!, endpoint.secret), true);
      }
      assert.equal(rx.maxInFlight("/story"), 1);

      // each replayed record is listed at its event's instant, between the first event and the fifth
      const records = await recordsOf(company, endpoint.id);
      assert.deepEqual(records.map((r) => seqOf(r.payload.transaction_id)), [1, 2, 3, 4, 5]);
      assert.ok(records.every((r) => r.event_created_at === r.inserted_at));

      const again = await company.post(`${ENDPOINTS}/${endpoint.id}/recover`, { since, include_skipped: true });
      assert.deepEqual(again.body.data, {
        endpoint_id: endpoint.id,
        deliveries: 0,
        failed: 0,
        failed_remaining: false,
        skipped: 0,
        skipped_remaining: false,
        skipped_after: null,
        skipped_deferred: 0,
      });
      await sleep(200);
      assert.deepEqual(seqsAt("/story", seen), [2, 3, 4, 5], "nothing sent twice");
      assert.equal((await recordsOf(company, endpoint.id)).length, 5);
      assert.deepEqual(seqsAt("/other"), [90], "another company's event went to its own endpoint only");
    });

    await t.step("without include_skipped only failed records come back", async () => {
      const company = await newCompany(ctx);
      const endpoint = await createEndpoint(company, `${rx.url}/plain`);
      assert.equal((await company.delete(`${ENDPOINTS}/${endpoint.id}`)).status, 200);
      await identified(company, 1);
      assert.equal((await company.post(`${ENDPOINTS}/${endpoint.id}/enable`)).status, 200);
      for (const body of [{ since }, { since, include_skipped: false }]) {
        const res = await company.post(`${ENDPOINTS}/${endpoint.id}/recover`, body);
        assert.deepEqual([res.status, res.body.data.skipped, res.body.data.deliveries], [202, 0, 0]);
      }
      assert.deepEqual(await recordsOf(company, endpoint.id), []);
    });

    await t.step("[since, until), the retention and the disabled periods bound what is replayed", async () => {
      const company = await newCompany(ctx);
      const endpoint = await createEndpoint(company, `${rx.url}/bounds`, { delivery_mode: "sequential" });
      const path = (p: string) => `${ENDPOINTS}/${endpoint.id}/${p}`;
      // two periods: 1 and 2 in the first, 4 and 5 in the second; 3 while enabled in between
      assert.equal((await company.delete(`${ENDPOINTS}/${endpoint.id}`)).status, 200);
      await identified(company, 1);
      await sleep(5);
      await identified(company, 2);
      assert.equal((await company.post(path("enable"))).status, 200);
      await identified(company, 3);
      await eventually("3 delivered", () => allSucceeded(company, endpoint.id, 1));
      assert.equal((await company.delete(`${ENDPOINTS}/${endpoint.id}`)).status, 200);
      await identified(company, 4);
      await sleep(5);
      const [{ at }] = await ctx.sql<{ at: string }[]>`select now()::text as at`;
      await sleep(5);
      await identified(company, 5);
      assert.equal((await company.post(path("enable"))).status, 200);

      // within the retention only: events a second old are past a retention of half a second
      await sleep(1_000);
      const old = await recoverDeliveries(ctx.sql, company.id, endpoint.id, { since: new Date(since) }, {
        includeSkipped: true,
        retentionDays: 0.5 / 86_400,
      });
      assert.equal(old.skipped, 0);

      // until is exclusive: 5 comes after it
      const seen = rx.at("/bounds").length;
      const res = await company.post(path("recover"), {
        since,
        until: new Date(at).toISOString(),
        include_skipped: true,
      });
      assert.deepEqual([res.status, res.body.data.skipped], [202, 3], JSON.stringify(res.body));
      await eventually("1, 2 and 4", () => rx.at("/bounds").length === seen + 3);
      const rest = await company.post(path("recover"), { since, include_skipped: true });
      assert.deepEqual([rest.status, rest.body.data.skipped], [202, 1]);
      await eventually("all five", () => allSucceeded(company, endpoint.id, 5));
      assert.deepEqual(seqsAt("/bounds", seen), [1, 2, 4, 5]);
    });

    await t.step("the endpoint's filter decides as the fan-out would have", async () => {
      const company = await newCompany(ctx);
      const endpoint = await createEndpoint(company, `${rx.url}/filtered`, {
        delivery_mode: "sequential",
        filter: `data.transaction_id != "${seqId(2)}"`,
      });
      assert.equal((await company.delete(`${ENDPOINTS}/${endpoint.id}`)).status, 200);
      for (let seq = 1; seq <= 3; seq++) await identified(company, seq);
      assert.equal((await company.post(`${ENDPOINTS}/${endpoint.id}/enable`)).status, 200);
      const res = await company.post(`${ENDPOINTS}/${endpoint.id}/recover`, { since, include_skipped: true });
      assert.deepEqual([res.status, res.body.data.skipped], [202, 2]);
      await eventually("two delivered", () => allSucceeded(company, endpoint.id, 2));
      assert.deepEqual(seqsAt("/filtered"), [1, 3]);
    });

    await t.step("operational events: those it names, never one about itself", async () => {
      const company = await newCompany(ctx);
      const endpoint = await createEndpoint(company, `${rx.url}/ops`, {
        enabled_events: ["endpoint.disabled"],
        delivery_mode: "sequential",
      });
      const watched = await createEndpoint(company, `${rx.url}/watched`);
      const everything = await createEndpoint(company, `${rx.url}/everything`, { enabled_events: ["*"] });
      // disabling it tells the others; disabling the watched one while it is off is what it missed
      for (const e of [endpoint, everything, watched]) {
        assert.equal((await company.delete(`${ENDPOINTS}/${e.id}`)).status, 200);
      }
      for (const e of [endpoint, everything]) {
        assert.equal((await company.post(`${ENDPOINTS}/${e.id}/enable`)).status, 200);
      }
      const res = await company.post(`${ENDPOINTS}/${endpoint.id}/recover`, { since, include_skipped: true });
      assert.deepEqual([res.status, res.body.data.skipped], [202, 2], JSON.stringify(res.body));
      await eventually("two delivered", () => allSucceeded(company, endpoint.id, 2));
      assert.deepEqual(rx.at("/ops").map((a) => a.body.data.endpoint_id), [everything.id, watched.id]);
      // `*` does not take operational events in
      const all = await company.post(`${ENDPOINTS}/${everything.id}/recover`, { since, include_skipped: true });
      assert.deepEqual([all.status, all.body.data.skipped], [202, 0]);
    });

    await t.step("at most the limit per call; the next call goes on from where it stopped", async () => {
      const company = await newCompany(ctx);
      const endpoint = await createEndpoint(company, `${rx.url}/limit`, { delivery_mode: "sequential" });
      assert.equal((await company.delete(`${ENDPOINTS}/${endpoint.id}`)).status, 200);
      for (let seq = 1; seq <= 5; seq++) await identified(company, seq);
      assert.equal((await company.post(`${ENDPOINTS}/${endpoint.id}/enable`)).status, 200);
      const calls = [];
      for (let i = 0; i < 4; i++) {
        const r = await recoverDeliveries(ctx.sql, company.id, endpoint.id, { since: new Date(since) }, {
          includeSkipped: true,
          retentionDays: 30,
          replayLimit: 2,
        });
        calls.push([r.skipped, r.skipped_remaining]);
      }
      assert.deepEqual(calls, [[2, true], [2, true], [1, false], [0, false]]);
      await eventually("all five", () => allSucceeded(company, endpoint.id, 5));
      assert.deepEqual(seqsAt("/limit"), [1, 2, 3, 4, 5]);
    });

    await t.step("two recovers at once queue each skipped event once", async () => {
      const company = await newCompany(ctx);
      const endpoint = await createEndpoint(company, `${rx.url}/race`);
      assert.equal((await company.delete(`${ENDPOINTS}/${endpoint.id}`)).status, 200);
      for (let seq = 1; seq <= 20; seq++) await identified(company, seq);
      assert.equal((await company.post(`${ENDPOINTS}/${endpoint.id}/enable`)).status, 200);
      const url = `${ENDPOINTS}/${endpoint.id}/recover`;
      const both = await Promise.all([1, 2].map(() => company.post(url, { since, include_skipped: true })));
      // the second finds the first running (409) or, come after it, the events with their records
      const outcomes = both.map((r) => r.status === 202 ? r.body.data.skipped : r.status).sort();
      assert.ok(["0,20", "20,409"].includes(String(outcomes)), JSON.stringify(both.map((r) => r.body)));
      await eventually("twenty delivered", () => allSucceeded(company, endpoint.id, 20));
      assert.deepEqual(seqsAt("/race").sort((a, b) => a - b), Array.from({ length: 20 }, (_, i) => i + 1));
    });

    await t.step("include_skipped must be a boolean, named in the error", async () => {
      const company = await newCompany(ctx);
      const endpoint = await createEndpoint(company, `${rx.url}/errors`);
      for (const [value, status] of [["yes", 422], [1, 422], [null, 400]] as const) {
        const res = await company.post(`${ENDPOINTS}/${endpoint.id}/recover`, { since, include_skipped: value });
        assert.equal(res.status, status, JSON.stringify(res.body));
        assert.deepEqual(Object.keys(res.body.errors), ["include_skipped"]);
      }
    });

    await t.step("retention forgets the periods that ended before its cutoff, not one still open", async () => {
      const company = await newCompany(ctx);
      const open = await createEndpoint(company, `${rx.url}/still-off`);
      assert.equal((await company.delete(`${ENDPOINTS}/${open.id}`)).status, 200);
      const periods = async () => [
        ...await ctx.sql<{ endpoint_id: string; open: boolean }[]>`
          select endpoint_id, disabled_until is null as open from webhook_endpoint_disabled_periods
          order by endpoint_id`,
      ];
      const before = await periods();
      assert.ok(before.filter((p) => !p.open).length >= 8, "the steps above closed their periods");
      assert.ok(before.some((p) => p.endpoint_id === open.id && p.open));
      await pruneHistory(ctx.sql, { retentionDays: 1, now: new Date(Date.now() + 2 * 86_400_000) });
      assert.deepEqual(await periods(), before.filter((p) => p.open));
    });
  } finally {
    await rx.close();
    await ctx.close();
  }
});

Deno.test("events made in the same millisecond are replayed in the order they were made", async () => {
  const ctx = await setup("webhook_replay_same_ms"); // no worker: the records' order is read, not delivered
  try {
    const company = await newCompany(ctx);
    const endpoint = await createEndpoint(company, "http://127.0.0.1:9/unused", { delivery_mode: "sequential" });
    assert.equal((await company.delete(`${ENDPOINTS}/${endpoint.id}`)).status, 200);
    // ids as one process makes them within one millisecond: the same time, the counter going up by one, so that
    // most neighbours differ only in the counter's last bits
    const msecs = Date.now();
    const ids = Array.from({ length: 64 }, (_, i) => v7({ msecs, seq: 0x1234_5600 + i }));
    for (const [i, id] of ids.entries()) {
      await ctx.sql`insert into events (id, company_id, type, data)
        values (${id}, ${company.id}, 'identified', ${ctx.sql.json({ transaction_id: seqId(i + 1) })})`;
    }
    assert.equal((await company.post(`${ENDPOINTS}/${endpoint.id}/enable`)).status, 200);
    const r = await recoverDeliveries(ctx.sql, company.id, endpoint.id, { since: new Date(msecs - 60_000) }, {
      includeSkipped: true,
      retentionDays: 30,
    });
    assert.equal(r.skipped, ids.length);
    const queued = await ctx.sql<{ event_id: string }[]>`
      select event_id from webhook_deliveries where company_id = ${company.id} and endpoint_id = ${endpoint.id}
      order by id`;
    assert.deepEqual(queued.map((q) => q.event_id), ids);
  } finally {
    await ctx.close();
  }
});

/**
 * Bounded and lock-free for others (issue 32, finding 3): one recover reads a bounded number of events and says where
 * the next goes on; a second recover of the endpoint at the same time answers 409; an endpoint's row held by one
 * tenant's transaction holds up nobody else's deliveries. WEBHOOK_RECOVER_SCAN_EVENTS is 5 here, where the default
 * reads 20,000, so a handful of events show what hundreds of thousands did.
 */
Deno.test("recover: a bounded read per call with a cursor, one at a time, nobody else waiting", async (t) => {
  const ctx = await setup("webhook_replay_bounded", {
    worker: true,
    env: { WEBHOOK_RETRY_SCHEDULE: "0.05", WEBHOOK_RECOVER_SCAN_EVENTS: "5" },
  });
  const down = new Set<string>();
  const rx = startReceiver(async (a) => {
    if (down.has(a.path)) await sleep(50); // a slow failure: A's records keep failing for seconds
    return new Response(null, { status: down.has(a.path) ? 500 : 204 });
  });
  const since = new Date(Date.now() - 60_000).toISOString();
  const recover = (company: Company, id: string, extra: Record<string, unknown> = {}) =>
    company.post(`${ENDPOINTS}/${id}/recover`, { since, include_skipped: true, ...extra });

  try {
    await t.step("more events than a call reads: each call answers where it stopped, the next goes on", async () => {
      const company = await newCompany(ctx);
      const endpoint = await createEndpoint(company, `${rx.url}/bounded`, {
        delivery_mode: "sequential",
        enabled_events: ["identified"],
      });
      assert.equal((await company.delete(`${ENDPOINTS}/${endpoint.id}`)).status, 200);
      // the disable's own event (endpoint.disabled) and six it does not take, then four it does: the first call
      // reads five of the seven and queues nothing
      for (let seq = 1; seq <= 6; seq++) {
        await emit(ctx, company, "payment_approved", { transaction_id: seqId(100 + seq) });
      }
      for (let seq = 1; seq <= 4; seq++) await emit(ctx, company, "identified", { transaction_id: seqId(seq) });
      assert.equal((await company.post(`${ENDPOINTS}/${endpoint.id}/enable`)).status, 200);

      const first = await recover(company, endpoint.id);
      assert.equal(first.status, 202, JSON.stringify(first.body));
      assert.deepEqual([first.body.data.skipped, first.body.data.skipped_remaining], [0, true]);
      assert.match(first.body.data.skipped_after, /^[0-9a-f-]{36}$/);
      const second = await recover(company, endpoint.id, { skipped_after: first.body.data.skipped_after });
      assert.deepEqual([second.body.data.skipped, second.body.data.skipped_remaining], [3, true]);
      const third = await recover(company, endpoint.id, { skipped_after: second.body.data.skipped_after });
      assert.deepEqual(
        [third.body.data.skipped, third.body.data.skipped_remaining, third.body.data.skipped_after],
        [1, false, null],
      );
      await eventually("the four delivered", async () => {
        const records = await recordsOf(company, endpoint.id);
        return records.length === 4 && records.every((r) => r.status === "succeeded");
      });
      assert.deepEqual(rx.at("/bounded").map((a) => seqOf(a.body.data.transaction_id)), [1, 2, 3, 4]);
      const bad = await recover(company, endpoint.id, { skipped_after: "not-an-id" });
      assert.deepEqual([bad.status, Object.keys(bad.body.errors)], [422, ["skipped_after"]]);
    });

    await t.step("a recover while another of the same endpoint runs answers 409 at once", async () => {
      const company = await newCompany(ctx);
      const endpoint = await createEndpoint(company, `${rx.url}/busy`);
      const other = await createEndpoint(company, `${rx.url}/busy-other`);
      const { promise: held, resolve: hold } = Promise.withResolvers<void>();
      const { promise: done, resolve: release } = Promise.withResolvers<void>();
      // the lock a running recover holds, taken here as one would
      const running = ctx.sql.begin(async (tx) => {
        await tx`select pg_advisory_xact_lock(${RECOVER_LOCK}, hashtext(${endpoint.id}::text))`;
        hold();
        await done;
      });
      await held;
      const started = performance.now();
      const busy = await recover(company, endpoint.id);
      assert.deepEqual([busy.status, busy.body], [409, {
        errors: { detail: "a recover of this endpoint is already running" },
      }]);
      assert.ok(performance.now() - started < 1_000, "at once, without waiting for the other");
      assert.equal((await recover(company, other.id)).status, 202, "another endpoint's recover goes on");
      release();
      await running;
      assert.equal((await recover(company, endpoint.id)).status, 202, "once the first is over");
    });

    await t.step("an endpoint's row held by one tenant holds up no other tenant's deliveries", async () => {
      // A's endpoint fails every attempt, so each of its batches has a verdict to write to its row
      const attacker = await newCompany(ctx);
      down.add("/a");
      const a = await createEndpoint(attacker, `${rx.url}/a`, { max_concurrency: 4 });
      for (let seq = 1; seq <= 24; seq++) {
        await emit(ctx, attacker, "identified", { transaction_id: seqId(seq) });
      }
      await eventually("A failing", () => rx.at("/a").length >= 8);
      const { promise: held, resolve: hold } = Promise.withResolvers<void>();
      const { promise: done, resolve: release } = Promise.withResolvers<void>();
      // what a recover's scan did before: A's row locked for as long as it ran
      const holding = ctx.sql.begin(async (tx) => {
        await tx`select 1 from webhook_endpoints where id = ${a.id} for no key update`;
        hold();
        await done;
      });
      try {
        await held;
        const seenA = rx.at("/a").length;
        const victim = await newCompany(ctx);
        const v = await createEndpoint(victim, `${rx.url}/v`);
        for (let seq = 1; seq <= 12; seq++) {
          await emit(ctx, victim, "identified", { transaction_id: seqId(seq) });
        }
        await eventually("V's twelve recorded as succeeded", async () => {
          const records = await recordsOf(victim, v.id);
          return records.length === 12 && records.every((r) => r.status === "succeeded");
        }, 5_000);
        // A's retries come on their own schedule: they go on while its row is held, in their own time
        await eventually(
          "A's attempts go on being recorded and made again too",
          () => rx.at("/a").length > seenA + 8,
          5_000,
        );
      } finally {
        release();
        await holding;
      }
      // every attempt failed: what the held row kept from being counted is counted by A's next batch
      const [{ recorded }] = await ctx.sql<{ recorded: number }[]>`
        select count(*)::int as recorded from webhook_attempts t join webhook_deliveries d on d.id = t.delivery_id
        where d.endpoint_id = ${a.id}`;
      await eventually("A's failures all counted on its row", async () => {
        const [row] = await ctx.sql<{ n: number }[]>`
          select consecutive_failures as n from webhook_endpoints where id = ${a.id}`;
        return row.n >= recorded;
      }, 5_000);
      down.delete("/a");
    });
  } finally {
    await rx.close();
    await ctx.close();
  }
});
