/**
 * The events list searched by an id an integrator holds: an event id (from a webhook body or a log) and a transaction id
 * (from its own records), alone, together and with the other filters; another company's ids find nothing. A file of
 * its own beside events_test.ts: these filters read events by their data, a path of their own (event_search.ts).
 */
import assert from "node:assert/strict";
import { newId } from "../../domain/basics/ids.ts";
import { uuidV7Instant } from "../../domain/webhooks/outbox/event_search.ts";
import { newCompany, setup } from "../support/helpers.ts";
import { createEndpoint, type DeliveryRecord as Rec, emit, EVENTS } from "../support/endpoints.ts";

Deno.test("searching the delivery records by event id and by transaction id", async (t) => {
  const ctx = await setup("webhook_event_search");
  try {
    const company = await newCompany(ctx);
    const other = await newCompany(ctx);
    const all = await createEndpoint(company, "https://example.com/all");
    const ids = await createEndpoint(company, "https://example.com/identified", { enabled_events: ["identified"] });
    await createEndpoint(other, "https://example.com/other");
    // transaction ids are UUIDv7, made when the transaction is (domain/basics/ids.ts)
    const [t1, t2] = [newId(), newId()];
    const first = await emit(ctx, company, "identified", { transaction_id: t1 });
    await emit(ctx, company, "identified", { transaction_id: t2 });
    const wire = await emit(ctx, company, "wire_created", { wire_id: newId(), transaction_ids: [t2, t1] });
    await emit(ctx, company, "payment_approved", { transaction_id: newId() });
    const foreign = await emit(ctx, other, "identified", { transaction_id: t1 });
    const list = async (query: string): Promise<Rec[]> => {
      const res = await company.get(`${EVENTS}?${query}`);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      return res.body.data;
    };
    const shown = (records: Rec[]) => records.map((r) => [r.type, r.endpoint_id]);

    await t.step("an event id lists its records, one per endpoint it went to, in the list's shape", async () => {
      const found = await list(`event_id=${first.id}`);
      assert.deepEqual(shown(found).sort(), [["identified", all.id], ["identified", ids.id]].sort());
      assert.ok(found.every((r) => r.event_id === first.id && r.payload.transaction_id === t1));
      // upper case, as a log may print it
      assert.equal((await list(`event_id=${first.id.toUpperCase()}`)).length, 2);
      assert.deepEqual(shown(await list(`event_id=${first.id}&endpoint_id=${all.id}`)), [["identified", all.id]]);
    });

    await t.step("a transaction id lists the records of every event naming it, newest first", async () => {
      const found = await list(`transaction_id=${t1}`);
      assert.deepEqual(shown(found)[0], ["wire_created", all.id], "newest first");
      assert.deepEqual(shown(found.slice(1)).sort(), [["identified", all.id], ["identified", ids.id]].sort());
      assert.deepEqual(found.map((r) => r.event_id), [wire.id, first.id, first.id]);
      assert.deepEqual(shown(await list(`transaction_id=${t1}&type=wire_created`)), [["wire_created", all.id]]);
      assert.deepEqual((await list(`transaction_id=${t1}&event_id=${wire.id}`)).map((r) => r.event_id), [wire.id]);
      assert.deepEqual(await list(`transaction_id=${t1}&event_id=${first.id}&endpoint_id=${ids.id}`).then(shown), [
        ["identified", ids.id],
      ]);
    });

    await t.step("ids of another company, unknown ids and ids that are not UUIDv7 find nothing", async () => {
      assert.deepEqual(await list(`event_id=${foreign.id}`), []);
      assert.deepEqual(await list(`event_id=${newId()}`), []);
      assert.deepEqual(await list(`transaction_id=${newId()}`), []);
      assert.deepEqual(await list(`transaction_id=${crypto.randomUUID()}`), []);
      assert.equal((await other.get(`${EVENTS}?transaction_id=${t1}`)).body.data.length, 1);
    });

    await t.step("an id that is not a UUID is refused, naming the parameter", async () => {
      for (const name of ["event_id", "transaction_id"]) {
        const res = await company.get(`${EVENTS}?${name}=not-an-id`);
        assert.deepEqual([res.status, res.body], [422, { errors: { [name]: ["is invalid"] } }]);
      }
    });
  } finally {
    await ctx.close();
  }
});

Deno.test("a UUIDv7 carries its instant; other versions carry none", () => {
  const before = Date.now();
  const at = uuidV7Instant(newId())!.getTime();
  assert.ok(at >= before && at <= Date.now());
  assert.equal(uuidV7Instant("0195f3a0-7c1e-7a41-9d2b-5c8e1f0a3b02")?.toISOString(), "2025-04-01T23:12:15.902Z");
  assert.equal(uuidV7Instant(crypto.randomUUID()), null);
  assert.equal(uuidV7Instant("not a uuid"), null);
});
