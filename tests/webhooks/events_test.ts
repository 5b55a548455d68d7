/**
 * The events list (delivery records): order, paging, filters, their refusals, a record's detail with its attempts, and
 * acknowledge and retry in the documented shapes.
 */
import assert from "node:assert/strict";
import { emitEvent, type EventType } from "../../domain/webhooks/outbox/events.ts";
import { type Company, newCompany, setup } from "../support/helpers.ts";
import { type DeliveryRecord as Rec, emit, ENDPOINTS, EVENTS } from "../support/endpoints.ts";

const LIST_KEYS = [
  "id",
  "event_id",
  "endpoint_id",
  "type",
  "status",
  "attempts_count",
  "batch_id",
  "next_attempt_at",
  "last_error",
  "payload",
  "event_created_at",
  "inserted_at",
];

async function list(company: Company, query = ""): Promise<Rec[]> {
  const res = await company.get(`${EVENTS}${query ? `?${query}` : ""}`);
  assert.equal(res.status, 200, `${query}: ${JSON.stringify(res.body)}`);
  return res.body.data;
}

const ids = (records: Rec[]) => records.map((r) => r.id);

Deno.test("listing delivery records", async (t) => {
  // No worker: records stay as the API leaves them.
  const ctx = await setup("webhook_events");
  const company = await newCompany(ctx);
  const all = (await company.post(ENDPOINTS, { url: "https://example.com/all" })).body.data;
  const payments = (await company.post(ENDPOINTS, {
    url: "https://example.com/payments",
    enabled_events: ["payment_approved"],
  })).body.data;
  const wires = (await company.post(ENDPOINTS, { url: "https://example.com/wires", enabled_events: ["wire_created"] }))
    .body.data;
  const [t1, t2, t3, t4, w1, s1] = Array.from({ length: 6 }, () => crypto.randomUUID());
  const events: [EventType, Record<string, unknown>][] = [
    ["identified", { transaction_id: t1 }],
    ["payment_approved", { transaction_id: t2 }],
    ["identified", { transaction_id: t3 }],
    ["wire_created", { wire_id: w1, transaction_ids: [t1, t3] }],
    ["payment_approved", { transaction_id: t4 }],
    ["subject_approved", { subject_id: s1 }],
  ];
  for (const [type, data] of events) await emit(ctx, company, type, data);
  // Records: 6 at `all`, 2 at `payments`, 1 at `wires`.
  const everything = await list(company);

  await t.step("newest first by default, 20 per page, in the documented shape", () => {
    assert.equal(everything.length, 9);
    for (const r of everything) assert.deepEqual(Object.keys(r), LIST_KEYS);
    const sorted = [...everything].sort((a, b) =>
      a.inserted_at === b.inserted_at ? (a.id < b.id ? 1 : -1) : a.inserted_at < b.inserted_at ? 1 : -1
    );
    assert.deepEqual(ids(everything), ids(sorted));
    assert.ok(everything.every((r) => r.status === "pending"));
    const wire = everything.find((r) => r.type === "wire_created" && r.endpoint_id === wires.id)!;
    assert.deepEqual(wire.payload, { wire_id: w1, transaction_ids: [t1, t3] });
    assert.match(wire.inserted_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    assert.match(wire.event_created_at, /Z$/);
  });

  await t.step("order_by=asc is the reverse order", async () => {
    assert.deepEqual(ids(await list(company, "order_by=asc")), ids(everything).reverse());
    assert.deepEqual(ids(await list(company, "order_by=desc")), ids(everything));
  });

  await t.step("last_id pages through in the chosen order without gaps or repeats", async () => {
    for (const order of ["desc", "asc"]) {
      const pages: string[] = [];
      let cursor = "";
      for (let i = 0; i < 10; i++) {
        const page = await list(company, `order_by=${order}&per_page=2${cursor ? `&last_id=${cursor}` : ""}`);
        if (page.length === 0) break;
        assert.ok(page.length <= 2);
        pages.push(...ids(page));
        cursor = page[page.length - 1].id;
      }
      assert.deepEqual(pages, order === "desc" ? ids(everything) : ids(everything).reverse());
    }
  });

  await t.step("type accepts one type or a comma-separated list", async () => {
    const identified = await list(company, "type=identified");
    assert.equal(identified.length, 2);
    assert.ok(identified.every((r) => r.type === "identified"));
    const two = await list(company, "type=identified,payment_approved");
    assert.deepEqual(
      two.map((r) => r.type).sort(),
      ["identified", "identified", "payment_approved", "payment_approved", "payment_approved", "payment_approved"],
    );
  });

  await t.step("endpoint_id and status filter, and combine with the rest", async () => {
    assert.equal((await list(company, `endpoint_id=${payments.id}`)).length, 2);
    assert.equal((await list(company, `endpoint_id=${all.id}`)).length, 6);
    assert.equal((await list(company, `endpoint_id=${all.id}&type=payment_approved`)).length, 2);

    const [one] = await list(company, `endpoint_id=${payments.id}&per_page=1`);
    assert.equal((await company.put(`${EVENTS}/${one.id}/acknowledge`)).status, 200);
    assert.equal((await company.delete(`${ENDPOINTS}/${wires.id}`)).status, 200); // its pending record fails
    assert.deepEqual(ids(await list(company, "status=succeeded")), [one.id]);
    const failed = await list(company, "status=failed");
    assert.deepEqual(failed.map((r) => r.endpoint_id), [wires.id]);
    assert.equal((await list(company, "status=pending")).length, 7);
    assert.deepEqual(ids(await list(company, `status=succeeded&endpoint_id=${all.id}`)), []);
  });

  await t.step("from and to are inclusive UTC bounds, as days or full datetimes", async () => {
    // three records of events with one record each (at `all`), moved in time together with their event
    const single = everything.filter((r) => r.type === "identified" || r.type === "subject_approved");
    const [a, b, c] = single.map((r) => r.id);
    const place = (id: string, at: string) =>
      ctx.sql.begin(async (tx) => {
        await tx`update events set inserted_at = ${at}::timestamptz
                 where id = (select event_id from webhook_deliveries where id = ${id})`;
        await tx`update webhook_deliveries set inserted_at = ${at}::timestamptz where id = ${id}`;
      });
    await place(a, "2020-01-10T00:00:00Z");
    await place(b, "2020-01-10T23:59:59.500Z");
    await place(c, "2020-01-11T00:00:00Z");
    const q = async (query: string) => new Set(ids(await list(company, query)));

    assert.deepEqual(await q("from=2020-01-10&to=2020-01-10"), new Set([a, b]));
    assert.deepEqual(await q("from=2020-01-10&to=2020-01-11"), new Set([a, b, c]));
    assert.deepEqual(await q("to=2020-01-10T23:59:59"), new Set([a, b]), "a second includes its fraction");
    assert.deepEqual(await q("to=2020-01-10T23:59:59.400Z"), new Set([a]));
    assert.deepEqual(await q("from=2020-01-10T23:59:59.5Z&to=2020-01-11T00:00:00Z"), new Set([b, c]));
    assert.deepEqual(await q("from=2020-01-11T03:00:00%2B03:00&to=2020-01-11"), new Set([c]), "offsets honoured");
    assert.deepEqual(await q("from=2020-01-11T02:00:00+03:00&to=2020-01-11"), new Set([b, c]), "an unencoded +");
    assert.deepEqual(await q("from=2020-01-11T00:00:01&to=2020-12-31"), new Set());
    assert.equal((await q("from=2020-01-11")).size, 7, "the bound alone, with everything newer");
  });

  await t.step("per_page defaults to 20 and is capped at 100", async () => {
    const busy = await newCompany(ctx);
    await busy.post(ENDPOINTS, { url: "https://example.com/busy" });
    await ctx.sql.begin(async (tx) => {
      for (let i = 0; i < 105; i++) await emitEvent(tx, busy.id, "identified", { transaction_id: crypto.randomUUID() });
    });
    assert.equal((await list(busy)).length, 20);
    assert.equal((await list(busy, "per_page=7")).length, 7);
    assert.equal((await list(busy, "per_page=100")).length, 100);
    assert.equal((await list(busy, "per_page=1000")).length, 100);
    assert.equal((await list(busy, "per_page=99999999999999999999999")).length, 100);
  });

  await t.step("bad filter values are 422 naming the parameter", async () => {
    const cases: [string, string][] = [
      ["per_page=0", "per_page"],
      ["per_page=-1", "per_page"],
      ["per_page=ten", "per_page"],
      ["per_page=2.5", "per_page"],
      ["order_by=newest", "order_by"],
      ["status=done", "status"],
      ["type=made_up", "type"],
      ["type=identified,made_up", "type"],
      ["endpoint_id=42", "endpoint_id"],
      ["last_id=not-a-uuid", "last_id"],
      ["from=2020-13-01", "from"],
      ["from=2020-02-30", "from"],
      ["to=yesterday", "to"],
      ["to=2020-01-10T25:00:00Z", "to"],
    ];
    for (const [query, field] of cases) {
      const res = await company.get(`${EVENTS}?${query}`);
      assert.equal(res.status, 422, query);
      assert.deepEqual(Object.keys(res.body.errors), [field], query);
    }
    const enumError = await company.get(`${EVENTS}?status=done`);
    assert.deepEqual(enumError.body.errors.status, ["must be one of: pending, succeeded, failed"]);
  });

  await t.step("a page over several days shows each record's own event, to the microsecond", async () => {
    // Events are kept in a partition per day and read back by their instants (docs/webhooks.md, "Reading the events
    // back"): a page reaching three days back, with instants a microsecond short of the next millisecond, must still
    // find every event.
    const other = await newCompany(ctx);
    await other.post(ENDPOINTS, { url: "https://example.com/days" });
    const sent: Record<string, unknown>[] = [];
    for (const back of [3, 1, 0]) {
      const data = { transaction_id: crypto.randomUUID() };
      const { id } = await emit(ctx, other, "identified", data);
      sent.push(data);
      await ctx.sql`update events
        set inserted_at = date_trunc('milliseconds', inserted_at) - make_interval(days => ${back}) + interval '999 microseconds'
        where id = ${id}`;
      await ctx.sql`update webhook_deliveries set inserted_at = (select inserted_at from events where id = ${id})
        where event_id = ${id}`;
    }
    const page = await list(other);
    assert.deepEqual(page.map((r) => r.payload), sent.toReversed(), "newest first, each with its own event");
    const oldest = await other.get(`${EVENTS}/${page[2].id}`);
    assert.deepEqual(oldest.body.data.payload, sent[0]);
    const [{ days }] = await ctx
      .sql`select count(distinct tableoid)::int as days from events where company_id = ${other.id}`;
    assert.ok(days >= 2, `the events sit in more than one partition (${days})`);
  });

  await t.step("another company's records and endpoints are invisible", async () => {
    const stranger = await newCompany(ctx);
    assert.deepEqual(await list(stranger), []);
    assert.deepEqual(await list(stranger, `endpoint_id=${all.id}`), []);
    assert.deepEqual(await list(stranger, `last_id=${everything[3].id}`), []);
    const res = await stranger.get(`${EVENTS}/${everything[0].id}`);
    assert.equal(res.status, 404);
    assert.deepEqual(res.body, { errors: { detail: "Not Found" } });
  });

  await t.step("detail adds company_id and the attempts; unknown or malformed ids answer 404 and 400", async () => {
    const shown = await company.get(`${EVENTS}/${everything[0].id}`);
    assert.equal(shown.status, 200);
    assert.deepEqual(Object.keys(shown.body.data), [
      "id",
      "event_id",
      "endpoint_id",
      "company_id",
      "type",
      "status",
      "attempts_count",
      "batch_id",
      "next_attempt_at",
      "last_error",
      "payload",
      "event_created_at",
      "inserted_at",
      "attempts",
      "request",
    ]);
    assert.equal(shown.body.data.company_id, company.id);
    // what its attempts send, rendered again (docs/webhooks.md, "What was sent")
    assert.equal(JSON.parse(shown.body.data.request.body).id, everything[0].id);
    assert.equal(shown.body.data.request.headers["webhook-id"], everything[0].id);
    assert.deepEqual(shown.body.data.attempts, []);
    assert.equal((await company.get(`${EVENTS}/${crypto.randomUUID()}`)).status, 404);
    const malformed = await company.get(`${EVENTS}/nope`);
    assert.equal(malformed.status, 400);
    assert.deepEqual(malformed.body, { errors: { id: ["is invalid"] } });
  });

  await t.step("acknowledge and retry answer in the documented shapes", async () => {
    const [record] = await list(company, `endpoint_id=${all.id}&status=pending&per_page=1`);
    const retried = await company.post(`${EVENTS}/${record.id}/retry`);
    assert.equal(retried.status, 200);
    assert.deepEqual(retried.body, { message: "retry enqueued" });
    const acked = await company.put(`${EVENTS}/${record.id}/acknowledge`);
    assert.deepEqual([acked.status, acked.body], [200, { data: { id: record.id, status: "succeeded" } }]);
    const again = await company.put(`${EVENTS}/${record.id}/acknowledge`);
    assert.deepEqual([again.status, again.body], [200, { data: { id: record.id, status: "succeeded" } }]);
    const refused = await company.post(`${EVENTS}/${record.id}/retry`);
    assert.deepEqual([refused.status, refused.body], [422, { errors: { detail: "event already succeeded" } }]);
    // A failed record (its endpoint was disabled) can be acknowledged.
    const [failed] = await list(company, "status=failed");
    assert.equal((await company.put(`${EVENTS}/${failed.id}/acknowledge`)).body.data.status, "succeeded");
  });

  await ctx.close();
});
