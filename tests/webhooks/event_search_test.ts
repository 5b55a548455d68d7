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

    await t.step("any UUID answers 200 with nothing found, whatever its version or instant; path ids 404", async () => {
      // 48 bits of milliseconds reach the year 10889: Postgres reads no timestamp past 9999 (these answered 500)
      const anyIds = [
        "ffffffff-ffff-7fff-bfff-ffffffffffff",
        "E8D4A510-0000-7000-8000-000000000000",
        "00000000-0000-7000-8000-000000000000",
        v7At(Date.now() + 86_400_000), // made tomorrow
        "ffffffff-ffff-ffff-ffff-ffffffffffff",
        "00000000-0000-0000-0000-000000000000",
        crypto.randomUUID(),
      ];
      for (const id of anyIds) {
        for (const name of ["event_id", "transaction_id", "last_id", "endpoint_id"]) {
          assert.deepEqual(await list(`${name}=${id}`), [], `${name}=${id}`);
        }
        assert.deepEqual(await list(`event_id=${id}&transaction_id=${id}`), []);
        assert.deepEqual(await list(`event_id=${first.id}&transaction_id=${id}`), []);
        assert.deepEqual(await list(`event_id=${id}&transaction_id=${t1}`), []);
        for (const [method, path] of [["GET", ""], ["PUT", "/acknowledge"], ["POST", "/retry"]]) {
          const res = await company.call(method, `${EVENTS}/${id}${path}`);
          assert.deepEqual([res.status, res.body], [404, { errors: { detail: "Not Found" } }], `${method} ${path}`);
        }
      }
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

/** A UUIDv7 of the instant `ms`, as one made then would start. */
function v7At(ms: number): string {
  const hex = ms.toString(16).padStart(12, "0");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-7000-8000-000000000000`;
}

Deno.test("a transaction's events are found wherever they lie among the company's, whichever release wrote them", async (t) => {
  const ctx = await setup("webhook_transaction_search");
  try {
    const company = await newCompany(ctx);
    const endpoint = await createEndpoint(company, "https://example.com/all");
    const events = async (transactionId: string) => {
      const res = await company.get(`${EVENTS}?transaction_id=${transactionId}&per_page=100`);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      return (res.body.data as Rec[]).map((r) => r.event_id);
    };
    /** Events of other transactions, written as any release writes them: one statement of the service's shape. */
    const others = (count: number) =>
      ctx.sql`insert into events (id, company_id, type, data)
              select uuid_v7(), ${company.id}, 'identified', jsonb_build_object('transaction_id', uuid_v7())
              from generate_series(1, ${count}::int)`;

    await t.step(
      "a pay-in's later events are found after 10,000 events of the company's other transactions",
      async () => {
        const payin = newId();
        const identified = await emit(ctx, company, "identified", { transaction_id: payin });
        await others(10_001);
        const approved = await emit(ctx, company, "payment_approved", { transaction_id: payin });
        assert.deepEqual(await events(payin), [approved.id, identified.id]);
      },
    );

    await t.step("an event written by the previous release, which knows nothing of the lookup, is found", async () => {
      // 1.2.1's emitEvent: the event and its record in one statement (domain/webhooks/outbox/events.ts)
      const [payin, wire, event] = [newId(), newId(), newId()];
      await ctx.sql`
        with event as (
          insert into events (id, company_id, type, data, traceparent)
          values (${event}, ${company.id}, 'wire_created',
                  ${ctx.sql.json({ wire_id: wire, transaction_ids: [newId(), payin] })}, null)
          returning inserted_at
        )
        insert into webhook_deliveries (id, company_id, event_id, endpoint_id, type, next_attempt_at, inserted_at)
        select ${newId()}, ${company.id}, ${event}, ${endpoint.id}, 'wire_created', event.inserted_at, event.inserted_at
        from event`;
      assert.deepEqual(await events(payin), [event]);
    });

    await t.step(
      "events written before the lookup existed are found as before, beside those written after",
      async () => {
        // a company of its own: the read of the events written before goes through the company's first 10,000
        const fresh = await newCompany(ctx);
        await createEndpoint(fresh, "https://example.com/fresh");
        const payin = newId();
        const before = await emit(ctx, fresh, "identified", { transaction_id: payin });
        // as if sql/0045 ran now: the event has no rows, and the lookup starts after it
        await ctx.sql`delete from event_transactions where event_id = ${before.id}`;
        await ctx.sql`update event_transactions_since set since = clock_timestamp()`;
        const after = await emit(ctx, fresh, "payment_approved", { transaction_id: payin });
        const found = await fresh.get(`${EVENTS}?transaction_id=${payin}`);
        assert.deepEqual(found.body.data.map((r: Rec) => r.event_id), [after.id, before.id]);
      },
    );
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
