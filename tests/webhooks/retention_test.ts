/**
 * Retention of the webhook history: old days go whole, a day a pending record needs stays, and `deno task prune` says
 * what it removed.
 */
import assert from "node:assert/strict";
import { emitEvent } from "../../domain/webhooks/outbox/events.ts";
import { ensurePartitions, pruneHistory } from "../../domain/webhooks/endpoints/retention.ts";
import { eventually, newCompany, setup } from "../support/helpers.ts";
import { seqId, startReceiver } from "../support/webhook_receiver.ts";
import { ENDPOINTS, EVENTS } from "../support/endpoints.ts";
import { runTask } from "../support/service_process.ts";

const DAY_MS = 86_400_000;

Deno.test("retention: old webhook history goes, pending records and everything else stay", async (t) => {
  // a failing endpoint's records stay pending for an hour between attempts
  const ctx = await setup("retention", { worker: true, env: { WEBHOOK_RETRY_SCHEDULE: "3600" } });
  const rx = startReceiver((a) => new Response(null, { status: a.path === "/down" ? 500 : 204 }));
  const company = await newCompany(ctx);
  const emit = (type: "identified" | "payment_approved", seq: number) =>
    ctx.sql.begin((tx) => emitEvent(tx, company.id, type, { transaction_id: seqId(seq) }));
  const records = async (query = "") =>
    (await company.get(`${EVENTS}?per_page=100${query}`)).body.data as { id: string; status: string; type: string }[];
  /** Every history row back by `days`, as if written then. */
  const age = async (days: number) => {
    for (const table of ["events", "webhook_deliveries", "webhook_attempts"]) {
      await ctx.sql`update ${ctx.sql(table)} set inserted_at = inserted_at - make_interval(days => ${days})
                    where company_id = ${company.id}`;
    }
  };
  const count = async (table: string) =>
    (await ctx.sql`select count(*)::int as n from ${ctx.sql(table)} where company_id = ${company.id}`)[0].n;

  try {
    const up = await company.post(ENDPOINTS, { url: `${rx.url}/up` });
    await company.post(ENDPOINTS, { url: `${rx.url}/down`, enabled_events: ["payment_approved"] });
    assert.equal(up.status, 201);
    for (let i = 1; i <= 3; i++) await emit("identified", i);
    await emit("payment_approved", 4);
    await eventually(
      "4 deliveries to /up and 1 attempt at /down",
      () => rx.at("/up").length === 4 && rx.at("/down").length === 1,
    );
    await eventually("the attempts recorded", async () => (await count("webhook_attempts")) === 5);
    const [{ n: transactionsBefore }] = await ctx.sql`select count(*)::int as n from people`;

    await t.step(
      "records past the retention go in bounded batches; a pending record, its event and attempt stay",
      async () => {
        await age(40);
        const pruned = await pruneHistory(ctx.sql, { retentionDays: 30, batch: 2 });
        assert.deepEqual(pruned.partitions_dropped, [], "no day is wholly past the cutoff yet");
        assert.equal(pruned.deliveries, 4, "the four records delivered to /up");
        const left = await records();
        assert.deepEqual(left.map((r) => [r.type, r.status]), [["payment_approved", "pending"]]);
        const detail = (await company.get(`${EVENTS}/${left[0].id}`)).body.data;
        assert.equal(detail.payload.transaction_id, seqId(4), "its event");
        assert.deepEqual(detail.attempts.map((a: { http_status: number }) => a.http_status), [500], "its attempt");
        const [{ n }] = await ctx.sql`select count(*)::int as n from people`;
        assert.equal(n, transactionsBefore, "customers are never pruned");
        assert.equal((await company.get(ENDPOINTS)).body.data.length, 2, "endpoints stay");
      },
    );

    await t.step("a newer record is not touched by the same retention", async () => {
      await emit("identified", 5);
      await eventually("delivered", () => rx.at("/up").length === 5);
      const pruned = await pruneHistory(ctx.sql, { retentionDays: 30 });
      assert.deepEqual(pruned, { deliveries: 0, partitions_dropped: [], stats_rows: 0, transaction_rows: 0 });
      assert.equal((await records("&type=identified")).length, 1);
    });

    await t.step("events and attempts go a whole day at once, except a day a pending record needs", async () => {
      const later = new Date(Date.now() + 3 * DAY_MS);
      const today = new Date().toISOString().slice(0, 10).replaceAll("-", "");
      const [{ n: eventsToday }] = await ctx.sql`select count(*)::int as n from ${ctx.sql(`events_p${today}`)}`;
      assert.ok(eventsToday >= 1, "today's event is in today's partition");
      const pruned = await pruneHistory(ctx.sql, { retentionDays: 1, now: later });
      assert.ok(pruned.partitions_dropped.includes(`events_p${today}`), pruned.partitions_dropped.join());
      assert.ok(pruned.partitions_dropped.includes(`webhook_attempts_p${today}`));
      assert.ok(!pruned.partitions_dropped.some((p) => p.includes("_p_before_")), "the pending record's day stays");
      assert.deepEqual((await records()).map((r) => r.status), ["pending"]);
      // the days ahead are made again, and events flow into them
      await ensurePartitions(ctx.sql);
      await emit("identified", 6);
      await eventually("delivered after the prune", () => rx.at("/up").length === 6);
      // a receipt comes before its attempt is recorded
      await eventually("recorded", async () => (await records("&status=pending&type=identified")).length === 0);
    });

    await t.step("once the record is no longer pending, its day goes too", async () => {
      const [pending] = await records("&status=pending&type=payment_approved");
      assert.equal((await company.put(`${EVENTS}/${pending.id}/acknowledge`)).status, 200);
      const named = await count("event_transactions");
      assert.ok(named >= 1, "the events name their transactions (sql/0045)");
      const pruned = await pruneHistory(ctx.sql, { retentionDays: 1, now: new Date(Date.now() + 3 * DAY_MS) });
      assert.equal(pruned.transaction_rows, named, "which events name which transaction goes with the events");
      assert.equal(await count("event_transactions"), 0);
      assert.ok(
        pruned.partitions_dropped.some((p) => p.startsWith("events_p_before_")),
        pruned.partitions_dropped.join(),
      );
      assert.ok(pruned.partitions_dropped.some((p) => p.startsWith("webhook_attempts_p_before_")));
      assert.equal(pruned.deliveries, 2, "the acknowledged record and the one delivered after the last prune");
      await ensurePartitions(ctx.sql);
    });

    await t.step("deno task prune removes what is past EVENT_RETENTION_DAYS now and says what", async () => {
      await emit("identified", 7);
      await eventually("delivered", () => rx.at("/up").length === 7);
      await eventually("attempt recorded", async () => (await records("&status=succeeded")).length === 1);
      await new Promise((r) => setTimeout(r, 1_000)); // older than the retention below: 0.00001 days is 0.864 s
      const out = await runTask(ctx.url, ["prune"], { EVENT_RETENTION_DAYS: "0.00001", JWT_SECRET: "x".repeat(32) });
      const text = out.stdout;
      assert.equal(out.code, 0, out.stderr);
      assert.match(text, /retention 0\.00001 day\(s\)/);
      assert.match(text, /delivery records deleted: 1\b/);
      assert.match(text, /partitions dropped: none/);
      assert.deepEqual(await records(), []);
    });
  } finally {
    await rx.close();
    await ctx.close();
  }
});
