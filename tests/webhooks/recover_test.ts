/**
 * Recover and enable: failed deliveries sent again in order, once each, in [since, until), with deliveries in flight,
 * and enable within the endpoint quota.
 */
import assert from "node:assert/strict";
import { emitEvent } from "../../domain/webhooks/outbox/events.ts";
import { type Company, eventually, newCompany, setup } from "../support/helpers.ts";
import { createEndpoint, ENDPOINTS, recordsOf } from "../support/endpoints.ts";
import { type Arrival, seqId, seqOf, sleep, startReceiver } from "../support/webhook_receiver.ts";

/** Per path: whether the receiver is down (500) and how long it takes to answer. */
const down = new Set<string>();
const slowMs = new Map<string, number>();

Deno.test("recover and enable: failed deliveries sent again, in order, once each", async (t) => {
  // ten attempts in well under a second: a record fails for good quickly
  const ctx = await setup("webhook_recover", {
    worker: true,
    env: { WEBHOOK_RETRY_SCHEDULE: "0.02", WEBHOOK_ENDPOINTS_PER_COMPANY: "2" },
  });
  const rx = startReceiver(async (a: Arrival) => {
    const delay = slowMs.get(a.path);
    if (delay) await sleep(delay);
    return new Response(null, { status: down.has(a.path) ? 500 : 204 });
  });
  const emit = (company: Company, seq: number) =>
    ctx.sql.begin((tx) => emitEvent(tx, company.id, "identified", { transaction_id: seqId(seq) }));
  const seqsAt = (path: string, from = 0) => rx.at(path).slice(from).map((a) => seqOf(a.body.data.transaction_id));
  const allFailed = async (company: Company, endpointId: string, n: number) => {
    const records = await recordsOf(company, endpointId);
    return records.length === n && records.every((r) => r.status === "failed");
  };
  const since = new Date(Date.now() - 60_000).toISOString();

  try {
    await t.step("sequential: the failed records are sent again in event order, then the newer ones", async () => {
      const company = await newCompany(ctx);
      down.add("/seq");
      const endpoint = await createEndpoint(company, `${rx.url}/seq`, { delivery_mode: "sequential" });
      for (let seq = 1; seq <= 3; seq++) await emit(company, seq);
      await eventually("three failed records", () => allFailed(company, endpoint.id, 3), 20_000);
      assert.equal(rx.at("/seq").length, 30, "ten attempts each");
      down.delete("/seq");

      const seen = rx.at("/seq").length;
      const res = await company.post(`${ENDPOINTS}/${endpoint.id}/recover`, { since });
      assert.equal(res.status, 202, JSON.stringify(res.body));
      assert.deepEqual(res.body, {
        data: {
          endpoint_id: endpoint.id,
          deliveries: 3,
          failed: 3,
          failed_remaining: false,
          skipped: 0,
          skipped_remaining: false,
          skipped_after: null,
          skipped_deferred: 0,
        },
      });
      await emit(company, 4);
      await eventually("four successes", async () => {
        const records = await recordsOf(company, endpoint.id);
        return records.length === 4 && records.every((r) => r.status === "succeeded");
      });
      assert.deepEqual(seqsAt("/seq", seen), [1, 2, 3, 4]);

      const again = await company.post(`${ENDPOINTS}/${endpoint.id}/recover`, { since });
      assert.deepEqual([again.status, again.body.data.deliveries], [202, 0], "nothing failed is left");
    });

    await t.step("a recover while deliveries are in flight sends each failed one once more, in order", async () => {
      const company = await newCompany(ctx);
      down.add("/busy");
      const endpoint = await createEndpoint(company, `${rx.url}/busy`, { delivery_mode: "sequential" });
      for (let seq = 1; seq <= 3; seq++) await emit(company, seq);
      await eventually("three failed records", () => allFailed(company, endpoint.id, 3), 20_000);
      down.delete("/busy");
      slowMs.set("/busy", 300);
      const seen = rx.at("/busy").length;
      for (let seq = 4; seq <= 6; seq++) await emit(company, seq);
      await eventually("record 4 in flight", () => rx.at("/busy").length > seen);

      const res = await company.post(`${ENDPOINTS}/${endpoint.id}/recover`, { since });
      assert.deepEqual([res.status, res.body.data.deliveries], [202, 3]);
      await eventually("all six succeeded", async () => {
        const records = await recordsOf(company, endpoint.id);
        return records.length === 6 && records.every((r) => r.status === "succeeded");
      }, 15_000);
      // 4 was already on its way; then the oldest pending first: the recovered ones, then 5 and 6
      assert.deepEqual(seqsAt("/busy", seen), [4, 1, 2, 3, 5, 6]);
      assert.equal(rx.maxInFlight("/busy"), 1);
    });

    await t.step("parallel: only failed records inserted in [since, until) come back", async () => {
      const company = await newCompany(ctx);
      down.add("/par");
      const endpoint = await createEndpoint(company, `${rx.url}/par`);
      for (let seq = 1; seq <= 4; seq++) {
        await emit(company, seq);
        await sleep(5); // distinct milliseconds: the list shows instants to the millisecond
      }
      await eventually("four failed records", () => allFailed(company, endpoint.id, 4), 20_000);
      down.delete("/par");
      const records = await recordsOf(company, endpoint.id);
      const seen = rx.at("/par").length;
      // until is exclusive: the third record's own instant leaves it and the fourth out
      const res = await company.post(`${ENDPOINTS}/${endpoint.id}/recover`, { since, until: records[2].inserted_at });
      assert.deepEqual([res.status, res.body.data.deliveries], [202, 2]);
      await eventually("the recovered arrive", () => rx.at("/par").length === seen + 2);
      await sleep(200);
      assert.deepEqual(seqsAt("/par", seen).sort(), [1, 2]);
      const after = await recordsOf(company, endpoint.id);
      assert.deepEqual(after.map((r) => r.status), ["succeeded", "succeeded", "failed", "failed"]);
    });

    await t.step("errors name the field; another company's endpoint is not found", async () => {
      const company = await newCompany(ctx);
      const endpoint = await createEndpoint(company, `${rx.url}/errors`);
      const missing = await company.post(`${ENDPOINTS}/${endpoint.id}/recover`, {});
      assert.deepEqual([missing.status, missing.body], [400, { errors: { since: ["can't be blank"] } }]);
      // no body at all is a request without `since`, with or without its JSON Content-Type (docs/errors.md)
      const url = `${ENDPOINTS}/${endpoint.id}/recover`;
      for (
        const [body, headers] of [
          [undefined, {}],
          ["  ", {}],
          [undefined, { "content-type": "" }],
        ] as const
      ) {
        const none = await company.call("POST", url, body, headers);
        assert.deepEqual(
          [none.status, none.body],
          [400, { errors: { since: ["can't be blank"] } }],
          JSON.stringify(headers),
        );
      }
      const bad = await company.post(`${ENDPOINTS}/${endpoint.id}/recover`, { since: "yesterday" });
      assert.equal(bad.status, 422);
      assert.deepEqual(Object.keys(bad.body.errors), ["since"]);
      const badUntil = await company.post(`${ENDPOINTS}/${endpoint.id}/recover`, { since, until: "2026-02-30" });
      assert.deepEqual([badUntil.status, Object.keys(badUntil.body.errors)], [422, ["until"]]);

      const other = await newCompany(ctx);
      for (const action of ["recover", "enable", "test"]) {
        const res = await other.post(`${ENDPOINTS}/${endpoint.id}/${action}`, { since });
        assert.deepEqual([action, res.status], [action, 404]);
      }
    });

    await t.step(
      "enable: a disabled endpoint gets events again; what failed meanwhile comes back by recover",
      async () => {
        const company = await newCompany(ctx);
        down.add("/enable");
        const endpoint = await createEndpoint(company, `${rx.url}/enable`, { delivery_mode: "sequential" });
        for (let seq = 1; seq <= 2; seq++) await emit(company, seq);
        await eventually("both records failed", () => allFailed(company, endpoint.id, 2), 10_000);
        // the integrator gives up on the broken receiver for a while
        assert.equal((await company.delete(`${ENDPOINTS}/${endpoint.id}`)).status, 200);
        const disabled = (await company.get(`${ENDPOINTS}/${endpoint.id}`)).body.data;
        assert.equal(disabled.disabled_reason, "manual");
        assert.ok(disabled.disabled_at, "disabled_at is set");
        await emit(company, 3); // no record: the endpoint is disabled
        const refused = await company.post(`${ENDPOINTS}/${endpoint.id}/recover`, { since });
        assert.deepEqual([refused.status, refused.body], [422, { errors: { detail: "endpoint is disabled" } }]);
        const test = await company.post(`${ENDPOINTS}/${endpoint.id}/test`, {});
        assert.deepEqual([test.status, test.body], [422, { errors: { detail: "endpoint is disabled" } }]);

        down.delete("/enable");
        const enabled = await company.post(`${ENDPOINTS}/${endpoint.id}/enable`);
        assert.equal(enabled.status, 200, JSON.stringify(enabled.body));
        assert.equal(enabled.body.data.status, "active");
        assert.deepEqual([enabled.body.data.disabled_reason, enabled.body.data.disabled_at], [null, null]);
        assert.equal((await company.post(`${ENDPOINTS}/${endpoint.id}/enable`)).body.data.status, "active");
        assert.equal((await recordsOf(company, endpoint.id)).length, 2, "the event of the disabled time has no record");
        const seen = rx.at("/enable").length;

        await emit(company, 4);
        const res = await company.post(`${ENDPOINTS}/${endpoint.id}/recover`, { since });
        assert.deepEqual([res.status, res.body.data.deliveries], [202, 2]);
        await eventually("three successes", async () => {
          const records = await recordsOf(company, endpoint.id);
          return records.length === 3 && records.every((r) => r.status === "succeeded");
        });
        const after = seqsAt("/enable", seen);
        assert.deepEqual(after.filter((s) => s !== 4), [1, 2]);
        assert.equal(after.length, 3, "each once");
      },
    );

    await t.step("enable respects the endpoint quota", async () => {
      const company = await newCompany(ctx);
      const first = await createEndpoint(company, `${rx.url}/quota/1`);
      assert.equal((await company.delete(`${ENDPOINTS}/${first.id}`)).status, 200);
      await createEndpoint(company, `${rx.url}/quota/2`);
      await createEndpoint(company, `${rx.url}/quota/3`);
      const res = await company.post(`${ENDPOINTS}/${first.id}/enable`);
      assert.equal(res.status, 422);
      assert.match(res.body.errors.detail, /at most 2 active endpoints/);
      assert.equal((await company.get(`${ENDPOINTS}/${first.id}`)).body.data.status, "disabled");
    });
  } finally {
    await rx.close();
    await ctx.close();
  }
});
