/**
 * Operational events (endpoint.failing, endpoint.disabled, delivery.exhausted): failures in a row, when an endpoint is
 * announced failing, who hears it, and a batch recorded twice counting once.
 */
import assert from "node:assert/strict";
import { Ajv2020 } from "ajv/dist/2020.js";
import { loadConfig } from "../../domain/infra/config.ts";
import { failuresInARow } from "../../domain/webhooks/endpoints/decisions.ts";
import { enables, OPERATIONAL_EVENT_TYPES } from "../../domain/webhooks/outbox/events.ts";
import { type Company, eventually, newCompany, setup, type TestContext } from "../support/helpers.ts";
import { recordedAgain } from "../support/recorded_again.ts";
import { createEndpoint, emit, ENDPOINTS, recordsOf } from "../support/endpoints.ts";
import { type Arrival, seqId, startReceiver } from "../support/webhook_receiver.ts";

const OPERATIONAL = [...OPERATIONAL_EVENT_TYPES];

Deno.test("failures in a row: every failure of a batch, none when any attempt of it succeeded", () => {
  assert.equal(failuresInARow([{ ok: false }, { ok: false }]), 2);
  assert.equal(failuresInARow([{ ok: false }, { ok: true }, { ok: false }]), 0);
  assert.equal(failuresInARow([]), 0);
});

Deno.test("when an endpoint is found failing is configured, and a count of 0 or a time of 0 is refused", () => {
  const base = { JWT_SECRET: "x".repeat(32) };
  const defaults = loadConfig(base);
  assert.deepEqual([defaults.webhookFailingAfterAttempts, defaults.webhookFailingAfterSeconds], [10, 3600]);
  const set = loadConfig({ ...base, WEBHOOK_FAILING_AFTER_ATTEMPTS: "3", WEBHOOK_FAILING_AFTER_SECONDS: "90.5" });
  assert.deepEqual([set.webhookFailingAfterAttempts, set.webhookFailingAfterSeconds], [3, 90.5]);
  assert.throws(() => loadConfig({ ...base, WEBHOOK_FAILING_AFTER_ATTEMPTS: "0" }), /WEBHOOK_FAILING_AFTER_ATTEMPTS/);
  assert.throws(() => loadConfig({ ...base, WEBHOOK_FAILING_AFTER_ATTEMPTS: "2.5" }), /WEBHOOK_FAILING_AFTER_ATTEMPTS/);
  assert.throws(() => loadConfig({ ...base, WEBHOOK_FAILING_AFTER_SECONDS: "0" }), /WEBHOOK_FAILING_AFTER_SECONDS/);
});

Deno.test("operational types go only to endpoints that name them: `*` does not take them in", () => {
  assert.equal(enables(["*"], "identified"), true);
  assert.equal(enables(["*"], "endpoint.failing"), false);
  assert.equal(enables(["identified"], "endpoint.disabled"), false);
  assert.equal(enables(["*", "delivery.exhausted"], "delivery.exhausted"), true);
});

Deno.test("an operator hears that an endpoint is failing before its customer does", async (t) => {
  const ctx = await setup("operational_events", {
    worker: true,
    env: {
      WEBHOOK_RETRY_SCHEDULE: "0.05",
      WEBHOOK_FAILING_AFTER_ATTEMPTS: "3",
      WEBHOOK_FAILING_AFTER_SECONDS: "1.5",
      WEBHOOK_DISABLE_AFTER_SECONDS: "3",
    },
  });
  // each path answers as its test says; the rest answer 200
  const answers = new Map<string, (n: number) => Response>();
  const rx = startReceiver((a, n) => answers.get(a.path)?.(n) ?? new Response("ok"));
  const failing = () => new Response("broken", { status: 500 });
  const types = (path: string) => rx.at(path).map((a) => a.body.type as string);
  const about = (path: string, endpointId: string) =>
    rx.at(path).filter((a) => a.body.data?.endpoint_id === endpointId);
  const shown = async (company: Company, id: string) => (await company.get(`${ENDPOINTS}/${id}`)).body.data;

  try {
    const company = await newCompany(ctx);
    const catalogue = (await company.get("/api/v2/notifications/event_types")).body.data as {
      type: string;
      schema: Record<string, unknown>;
    }[];
    const ajv = new Ajv2020({ strict: true, allErrors: true });
    const validate = new Map(catalogue.map((e) => [e.type, ajv.compile(e.schema)]));
    const valid = (a: Arrival) => {
      const check = validate.get(a.body.type)!;
      assert.ok(check(a.body), `${a.raw}\n${JSON.stringify(check.errors)}`);
    };

    // the operator's endpoint: the operational types alone, one at a time in the order they were emitted
    const ops = await createEndpoint(company, `${rx.url}/ops`, {
      enabled_events: OPERATIONAL,
      delivery_mode: "sequential",
    });
    // an endpoint written before operational events existed
    const everything = await createEndpoint(company, `${rx.url}/everything`, { enabled_events: ["*"] });
    // another company's operator
    const other = await newCompany(ctx);
    const theirs = await createEndpoint(other, `${rx.url}/other`, { enabled_events: OPERATIONAL });

    await t.step(
      "a failing endpoint: failing once, its exhausted records, then disabled; never to itself",
      async () => {
        answers.set("/a", failing);
        // A subscribes to the operational types too: it still hears nothing about itself
        const a = await createEndpoint(company, `${rx.url}/a`, { enabled_events: ["identified", ...OPERATIONAL] });
        await emit(ctx, company, "identified", { transaction_id: seqId(1) });
        await emit(ctx, company, "identified", { transaction_id: seqId(2) });
        const records = await recordsOf(company, a.id);
        assert.equal(records.length, 2);

        // 2 records x 10 attempts: one endpoint.failing at the third failure in a row, one delivery.exhausted each
        await eventually("failing and both records exhausted", () => about("/ops", a.id).length === 3);
        await eventually(
          "A's records failed",
          async () => (await recordsOf(company, a.id)).every((r) => r.status === "failed"),
        );
        assert.equal((await shown(company, a.id)).status, "active", "not disabled yet: 3 s have not passed");
        // failing for longer than WEBHOOK_DISABLE_AFTER_SECONDS: the next failed attempt disables it
        const since = Date.parse(about("/ops", a.id)[0].body.data.failing_since);
        await new Promise((r) => setTimeout(r, Math.max(0, since + 3_100 - Date.now())));
        await emit(ctx, company, "identified", { transaction_id: seqId(3) });
        const disabled = await eventually("disabled", async () => {
          const e = await shown(company, a.id);
          return e.status === "disabled" && e;
        });
        assert.equal(disabled.disabled_reason, "failing");
        await eventually("endpoint.disabled arrives", () => about("/ops", a.id).length === 4);

        const heard = about("/ops", a.id);
        heard.forEach(valid);
        assert.deepEqual(heard.map((h) => h.body.type), [
          "endpoint.failing",
          "delivery.exhausted",
          "delivery.exhausted",
          "endpoint.disabled",
        ]);
        const [failingEvent, , , disabledEvent] = heard.map((h) => h.body.data);
        assert.equal(failingEvent.url, `${rx.url}/a`);
        // attempts of both records may be recorded together: the count may pass 3 before it is announced
        assert.ok(failingEvent.consecutive_failures >= 3 && failingEvent.consecutive_failures < 20);
        assert.equal(failingEvent.last_error, "HTTP 500");
        assert.ok(Date.parse(failingEvent.failing_since) <= Date.parse(disabled.disabled_at));
        const exhausted = heard.slice(1, 3).map((h) => h.body.data);
        assert.deepEqual(new Set(exhausted.map((x) => x.delivery_id)), new Set(records.map((r) => r.id)));
        for (const x of exhausted) {
          const record = records.find((r) => r.id === x.delivery_id)!;
          assert.deepEqual(
            [x.event_id, x.event_type, x.attempts, x.last_error, x.endpoint_id],
            [record.event_id, "identified", 10, "HTTP 500", a.id],
          );
        }
        assert.deepEqual(
          [disabledEvent.reason, disabledEvent.disabled_at, disabledEvent.url],
          ["failing", disabled.disabled_at, `${rx.url}/a`],
        );
        // the third record failed with the endpoint, not by its schedule: no delivery.exhausted for it
        assert.equal(heard.filter((h) => h.body.type === "delivery.exhausted").length, 2);

        assert.deepEqual(new Set(types("/a")), new Set(["identified"]), "A never hears about itself");
        assert.deepEqual(new Set(types("/everything")), new Set(["identified"]), "`*` takes in no operational type");
        // the operator's endpoint got them as delivery records, listed like any other
        const listed = (await recordsOf(company, ops.id)).map((r) => r.type);
        assert.deepEqual(listed, heard.map((h) => h.body.type));
      },
    );

    await t.step("a success ends the streak: the next streak is announced again", async () => {
      // sequential: record 1 fails 3 times then succeeds; record 2, emitted after, the same
      answers.set("/flaky", (n) => n % 4 === 0 ? new Response("ok") : failing());
      const flaky = await createEndpoint(company, `${rx.url}/flaky`, { delivery_mode: "sequential" });
      await emit(ctx, company, "identified", { transaction_id: seqId(11) });
      await eventually("first record delivered", () => rx.at("/flaky").length === 4);
      await eventually("first streak announced", () => about("/ops", flaky.id).length === 1);
      await emit(ctx, company, "identified", { transaction_id: seqId(12) });
      await eventually("second record delivered", () => rx.at("/flaky").length === 8);
      await eventually("second streak announced", () => about("/ops", flaky.id).length === 2);
      const heard = about("/ops", flaky.id);
      heard.forEach(valid);
      assert.deepEqual(heard.map((h) => [h.body.type, h.body.data.consecutive_failures]), [
        ["endpoint.failing", 3],
        ["endpoint.failing", 3],
      ]);
      const [first, second] = heard.map((h) => Date.parse(h.body.data.failing_since));
      assert.ok(second > first, "each streak has its own start");
      assert.equal((await shown(company, flaky.id)).status, "active");
    });

    await t.step("failing for WEBHOOK_FAILING_AFTER_SECONDS is announced before the count is reached", async () => {
      // two failures 2 s apart (Retry-After), then a success: fewer than 3 in a row, but failing for over 1.5 s
      answers.set(
        "/slow",
        (n) => n <= 2 ? new Response("busy", { status: 503, headers: { "retry-after": "2" } }) : new Response("ok"),
      );
      const slow = await createEndpoint(company, `${rx.url}/slow`);
      await emit(ctx, company, "identified", { transaction_id: seqId(21) });
      await eventually("the third attempt", () => rx.at("/slow").length === 3, 10_000);
      await eventually("announced", () => about("/ops", slow.id).length === 1);
      const [heard] = about("/ops", slow.id);
      valid(heard);
      assert.deepEqual(
        [heard.body.type, heard.body.data.consecutive_failures, heard.body.data.last_error],
        ["endpoint.failing", 2, "HTTP 503"],
      );
      const [first, second] = rx.at("/slow");
      assert.ok(second.receivedAt - first.receivedAt >= 1_500, "the second failure came after the 1.5 s");
    });

    await t.step("disabling by hand is announced once, to the other endpoints", async () => {
      const gone = await createEndpoint(company, `${rx.url}/by-hand`, { enabled_events: OPERATIONAL });
      assert.equal((await company.delete(`${ENDPOINTS}/${gone.id}`)).status, 200);
      assert.equal((await company.delete(`${ENDPOINTS}/${gone.id}`)).status, 200);
      await eventually("endpoint.disabled arrives", () => about("/ops", gone.id).length === 1);
      const [heard] = about("/ops", gone.id);
      valid(heard);
      assert.deepEqual([heard.body.type, heard.body.data.reason], ["endpoint.disabled", "manual"]);
      assert.equal(rx.at("/by-hand").length, 0);
      // a moment for a second event, which must not come
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(about("/ops", gone.id).length, 1);
    });

    await t.step("another company hears nothing of these", async () => {
      assert.deepEqual(await recordsOf(other, theirs.id), []);
      assert.equal(rx.at("/other").length, 0);
    });

    await t.step("a test event of an operational type: to an endpoint that names it, refused for `*`", async () => {
      const sent = await company.post(`${ENDPOINTS}/${ops.id}/test`, { type: "endpoint.failing" });
      assert.equal(sent.status, 202, JSON.stringify(sent.body));
      const refused = await company.post(`${ENDPOINTS}/${everything.id}/test`, { type: "endpoint.failing" });
      assert.deepEqual([refused.status, refused.body.errors], [422, { type: ["is not enabled for this endpoint"] }]);
    });
  } finally {
    await rx.close();
    await ctx.close();
  }
});

Deno.test("a batch recorded again after a lost connection counts its failures once", async () => {
  const inARow = async (ctx: TestContext, company: Company, endpointId: string) =>
    (await ctx.sql<{ n: number }[]>`
      select consecutive_failures as n from webhook_endpoints where company_id = ${company.id} and id = ${endpointId}`)[
      0
    ]
      .n;
  const seen = await recordedAgain(
    "operational_events_again",
    { httpStatus: 500, responseBody: "broken", durationMs: 3 },
    inARow,
  );
  assert.equal(seen.recorded, 1);
  assert.equal(seen.madeAgain, 1, "the committed batch counts once");
  assert.equal(seen.firstTryLost, 2, "a batch whose first try never reached the database counts when made again");
});
