/**
 * Sandbox test clocks through the API (docs/sandbox.md, "Test clocks"): creating, showing, listing, advancing and
 * deleting a clock, subscriptions created on one, what an advance refuses, the limits, and another company's clock.
 * What a receiver gets from an advance is tests/webhooks/test_clock_delivery_test.ts.
 */
import assert from "node:assert/strict";
import { newCompany, setup } from "../support/helpers.ts";
import { assertCreated, eventsOf, lastEventId, registerPerson, typesSince } from "../support/rails.ts";
import {
  MAX_ADVANCE_STEPS,
  MAX_CLOCKS_PER_COMPANY,
  MAX_SUBSCRIPTIONS_PER_CLOCK,
} from "../../domain/rails/test_clocks.ts";

const CLOCKS = "/api/sandbox/test_clocks";

Deno.test("test clocks: subscriptions on a clock are charged when it is advanced, and only then", async (t) => {
  const ctx = await setup("rails_test_clocks");
  const company = await newCompany(ctx);
  try {
    const person = await registerPerson(company);
    const newClock = async (body: unknown = { frozen_time: "2026-01-31T12:00:00Z" }) =>
      assertCreated(await company.post(CLOCKS, body));
    const subscribe = async (clockId: unknown, more: Record<string, unknown> = {}) =>
      assertCreated(
        await company.post("/api/sandbox/subscriptions", {
          subject_id: person.id,
          cycles: 3,
          test_clock_id: clockId,
          ...more,
        }),
      );
    const advance = (id: unknown, frozen_time: unknown) => company.post(`${CLOCKS}/${id}/advance`, { frozen_time });

    await t.step("a clock starts where it is told, or now; it is shown and listed", async () => {
      const clock = await newClock({ name: "quarter", frozen_time: "2026-01-31T09:00:00-03:00" });
      assert.deepEqual(
        [clock.name, clock.frozen_time, clock.next_step_at, clock.subscriptions, clock.pix_charges],
        ["quarter", "2026-01-31T12:00:00.000Z", null, [], []],
      );
      const before = Date.now();
      const now = assertCreated(await company.call("POST", CLOCKS));
      assert.equal(now.name, "");
      const started = Date.parse(now.frozen_time as string);
      assert.ok(started >= before - 1000 && started <= Date.now() + 1000, `${now.frozen_time} is now`);
      const shown = await company.get(`${CLOCKS}/${clock.id}`);
      assert.deepEqual([shown.status, shown.body.data], [200, clock]);
      const listed = await company.get(CLOCKS);
      assert.deepEqual(listed.body.data.map((c: { id: string }) => c.id), [clock.id, now.id]);
    });

    await t.step("a subscription on a clock: created at the clock's time, charged a month later", async () => {
      const clock = await newClock();
      const since = await lastEventId(ctx, company);
      const sub = await subscribe(clock.id);
      assert.deepEqual(
        [sub.status, sub.test_clock_id, sub.interval, sub.fail_at_cycle],
        ["pending", clock.id, "month", null],
      );
      assert.deepEqual(await typesSince(ctx, company, since), ["subscription_qr_code_generated"]);
      const shown = (await company.get(`${CLOCKS}/${clock.id}`)).body.data;
      // anchored on the 31st: February's invoice on its last day
      assert.equal(shown.next_step_at, "2026-02-28T12:00:00.000Z");
      assert.deepEqual(shown.subscriptions, [{
        id: sub.id,
        status: "pending",
        interval: "month",
        cycles: 3,
        paid_cycles: 0,
        fail_at_cycle: null,
        next_invoice_at: "2026-02-28T12:00:00.000Z",
      }]);

      const early = await advance(clock.id, "2026-02-28T11:59:59Z");
      assert.equal(early.status, 201, JSON.stringify(early.body));
      assert.deepEqual(early.body.data.steps, []);
      assert.deepEqual(await typesSince(ctx, company, since), ["subscription_qr_code_generated"], "nothing yet");

      const after = await lastEventId(ctx, company);
      const res = await advance(clock.id, "2026-03-31T12:00:00Z");
      const moved = assertCreated(res);
      assert.equal(moved.frozen_time, "2026-03-31T12:00:00.000Z");
      assert.deepEqual(moved.steps, [
        {
          at: "2026-02-28T12:00:00.000Z",
          kind: "invoice",
          subscription_id: sub.id,
          cycle: 1,
          outcome: "paid",
          events: ["invoice_paid", "subscription_activated"],
        },
        {
          at: "2026-03-31T12:00:00.000Z",
          kind: "invoice",
          subscription_id: sub.id,
          cycle: 2,
          outcome: "paid",
          events: ["invoice_paid"],
        },
      ]);
      assert.deepEqual(await typesSince(ctx, company, after), [
        "invoice_paid",
        "subscription_activated",
        "invoice_paid",
      ]);
      const invoices = (await eventsOf(ctx, company, "invoice_paid")).filter((e) => e.id > after!);
      for (const e of invoices) {
        assert.deepEqual(Object.keys(e.data), ["invoice"]);
        assert.equal((e.data.invoice as { subscription_id: string }).subscription_id, sub.id);
      }
      const subscriptions = moved.subscriptions as Record<string, unknown>[];
      assert.deepEqual(
        [subscriptions[0].status, subscriptions[0].paid_cycles, subscriptions[0].next_invoice_at],
        ["active", 2, "2026-04-30T12:00:00.000Z"],
      );
    });

    await t.step("an invoice the sandbox says is not paid cancels the subscription on its date", async () => {
      const clock = await newClock();
      const sub = await subscribe(clock.id, { cycles: 12, interval: "week", fail_at_cycle: 2 });
      const since = await lastEventId(ctx, company);
      const moved = assertCreated(await advance(clock.id, "2026-06-01T00:00:00Z"));
      assert.deepEqual((moved.steps as { cycle: number; outcome: string }[]).map((s) => [s.cycle, s.outcome]), [
        [1, "paid"],
        [2, "failed"],
      ]);
      assert.deepEqual(await typesSince(ctx, company, since), [
        "invoice_paid",
        "subscription_activated",
        "subscription_canceled",
      ]);
      const [canceled] = (await eventsOf(ctx, company, "subscription_canceled")).filter((e) => e.id > since!);
      assert.deepEqual(canceled.data.subscription, {
        canceled_by_payer: false,
        canceled_reason: "invoice of cycle 2 was not paid",
        id: sub.id,
        status: "canceled",
        subject_id: person.id,
      });
      assert.equal(moved.next_step_at, null);
    });

    await t.step("a PIX charge on a clock expires unpaid when the clock reaches it; a paid one does not", async () => {
      const clock = await newClock();
      const charge = async (more: Record<string, unknown> = {}) =>
        assertCreated(
          await company.post("/api/sandbox/pix_charges", {
            subject_id: person.id,
            value: "45.00",
            test_clock_id: clock.id,
            ...more,
          }),
        );
      const since = await lastEventId(ctx, company);
      const soon = await charge();
      assert.deepEqual(
        [soon.status, soon.test_clock_id, soon.expires_at],
        ["pending", clock.id, "2026-01-31T13:00:00.000Z"],
        "an hour on the clock by default",
      );
      const later = await charge({ expires_at: "2026-02-10T00:00:00Z" });
      const paid = await charge({ expires_at: "2026-02-01T00:00:00Z" });
      assertCreated(await company.post(`/api/sandbox/pix_charges/${paid.id}/pay`, {}));
      assert.deepEqual(await typesSince(ctx, company, since), ["identified"], "the paid one, nothing else yet");
      const shown = (await company.get(`${CLOCKS}/${clock.id}`)).body.data;
      assert.equal(shown.next_step_at, "2026-01-31T13:00:00.000Z");
      assert.deepEqual(
        shown.pix_charges.map((c: Record<string, unknown>) => [c.id, c.status, c.expires_at]),
        [
          [soon.id, "pending", "2026-01-31T13:00:00.000Z"],
          [later.id, "pending", "2026-02-10T00:00:00.000Z"],
          [paid.id, "paid", "2026-02-01T00:00:00.000Z"],
        ],
      );

      const after = await lastEventId(ctx, company);
      const moved = assertCreated(await advance(clock.id, "2026-02-10T00:00:00Z"));
      assert.deepEqual(moved.steps, [
        {
          at: "2026-01-31T13:00:00.000Z",
          kind: "pix_charge_expiry",
          transaction_id: soon.id,
          outcome: "expired",
          events: ["payment_expired"],
        },
        {
          at: "2026-02-10T00:00:00.000Z",
          kind: "pix_charge_expiry",
          transaction_id: later.id,
          outcome: "expired",
          events: ["payment_expired"],
        },
      ]);
      const expired = (await eventsOf(ctx, company, "payment_expired")).filter((e) => e.id > after!);
      assert.deepEqual(expired.map((e) => e.data), [{ transaction_id: soon.id }, { transaction_id: later.id }]);
      const [tx] = (await company.get(`/api/v1/subject/${person.id}/transactions`)).body.data
        .filter((t: { id: string }) => t.id === soon.id);
      assert.equal(tx.status, "expired");
      const again = await company.post(`/api/sandbox/pix_charges/${soon.id}/pay`, {});
      assert.deepEqual([again.status, again.body], [422, { errors: { status: ["is expired"] } }]);
    });

    await t.step("a PIX charge's expiry is after the clock's time, and only on a clock", async () => {
      const clock = await newClock();
      const body = { subject_id: person.id, value: "45.00" };
      const past = await company.post("/api/sandbox/pix_charges", {
        ...body,
        test_clock_id: clock.id,
        expires_at: "2026-01-31T12:00:00Z",
      });
      assert.deepEqual([past.status, past.body], [422, {
        errors: { expires_at: ["must be after the clock's frozen_time, 2026-01-31T12:00:00.000Z"] },
      }]);
      const plain = await company.post("/api/sandbox/pix_charges", { ...body, expires_at: "2027-01-01T00:00:00Z" });
      assert.deepEqual([plain.status, plain.body], [422, {
        errors: { expires_at: ["can only be given with test_clock_id"] },
      }]);
      const without = assertCreated(await company.post("/api/sandbox/pix_charges", body));
      assert.deepEqual(["test_clock_id" in without, "expires_at" in without], [false, false]);
    });

    await t.step("pay_invoice still pays at once; the clock then charges the cycles after it", async () => {
      const clock = await newClock();
      const sub = await subscribe(clock.id);
      assertCreated(await company.post(`/api/sandbox/subscriptions/${sub.id}/pay_invoice`));
      const moved = assertCreated(await advance(clock.id, "2026-03-31T12:00:00Z"));
      assert.deepEqual((moved.steps as { cycle: number }[]).map((s) => s.cycle), [2]);
    });

    await t.step("two advances to the same time at once: one runs the steps, the other is refused", async () => {
      const clock = await newClock();
      await subscribe(clock.id);
      const since = await lastEventId(ctx, company);
      const both = await Promise.all([
        advance(clock.id, "2026-04-30T12:00:00Z"),
        advance(clock.id, "2026-04-30T12:00:00Z"),
      ]);
      assert.deepEqual(both.map((r) => r.status).sort(), [201, 422]);
      assert.deepEqual(await typesSince(ctx, company, since), [
        "invoice_paid",
        "subscription_activated",
        "invoice_paid",
        "invoice_paid",
        "subscription_completed",
      ], "each invoice once");
    });

    await t.step("an advance goes forward, to a real time, within the clock's range", async () => {
      const clock = await newClock();
      const same = await advance(clock.id, "2026-01-31T12:00:00Z");
      assert.deepEqual([same.status, same.body], [422, {
        errors: { frozen_time: ["must be after the clock's frozen_time, 2026-01-31T12:00:00.000Z"] },
      }]);
      assert.equal((await advance(clock.id, "2025-01-01T00:00:00Z")).status, 422);
      const bad = await advance(clock.id, "31/03/2026");
      assert.deepEqual([bad.status, bad.body], [422, {
        errors: { frozen_time: ["has invalid format: expected an ISO 8601 date and time, e.g. 2026-01-01T00:00:00Z"] },
      }]);
      const missing = await company.post(`${CLOCKS}/${clock.id}/advance`, {});
      assert.deepEqual([missing.status, missing.body], [400, { errors: { frozen_time: ["can't be blank"] } }]);
      const far = await advance(clock.id, "2200-01-01T00:00:00Z");
      assert.deepEqual([far.status, Object.keys(far.body.errors)], [422, ["frozen_time"]]);
      const ancient = await company.post(CLOCKS, { frozen_time: "1999-12-31T23:59:59Z" });
      assert.deepEqual([ancient.status, Object.keys(ancient.body.errors)], [422, ["frozen_time"]]);
      const id = await company.post(`${CLOCKS}/not-a-uuid/advance`, { frozen_time: "2027-01-01" });
      assert.deepEqual([id.status, id.body], [400, { errors: { id: ["is invalid"] } }]);
    });

    await t.step(`one advance takes at most ${MAX_ADVANCE_STEPS} steps; past that nothing changes`, async () => {
      const clock = await newClock({ frozen_time: "2026-01-01T00:00:00Z" });
      const sub = await subscribe(clock.id, { cycles: 1200, interval: "day" });
      const since = await lastEventId(ctx, company);
      const over = await advance(clock.id, "2026-04-12T00:00:00Z"); // 101 days
      assert.deepEqual([over.status, over.body], [422, {
        errors: {
          frozen_time: [
            `would take more than ${MAX_ADVANCE_STEPS} steps in one advance; advance to 2026-04-11T00:00:00.000Z or earlier first`,
          ],
        },
      }]);
      assert.deepEqual(await typesSince(ctx, company, since), []);
      const unchanged = (await company.get(`${CLOCKS}/${clock.id}`)).body.data;
      assert.deepEqual([unchanged.frozen_time, unchanged.subscriptions[0].paid_cycles], [
        "2026-01-01T00:00:00.000Z",
        0,
      ]);

      const moved = assertCreated(await advance(clock.id, "2026-04-11T00:00:00Z")); // 100 days
      assert.equal((moved.steps as unknown[]).length, MAX_ADVANCE_STEPS);
      assert.equal((await typesSince(ctx, company, since)).length, MAX_ADVANCE_STEPS + 1, "100 invoices, 1 activation");
      const [row] = await ctx.sql`select paid_cycles from subscriptions where id = ${sub.id as string}`;
      assert.equal(row.paid_cycles, MAX_ADVANCE_STEPS);
    });

    await t.step("interval and fail_at_cycle need a clock; fail_at_cycle is one of the cycles", async () => {
      const plain = await company.post("/api/sandbox/subscriptions", {
        subject_id: person.id,
        cycles: 3,
        interval: "week",
        fail_at_cycle: 2,
      });
      assert.deepEqual([plain.status, plain.body], [422, {
        errors: {
          interval: ["can only be given with test_clock_id"],
          fail_at_cycle: ["can only be given with test_clock_id"],
        },
      }]);
      const clock = await newClock();
      const beyond = await company.post("/api/sandbox/subscriptions", {
        subject_id: person.id,
        cycles: 3,
        test_clock_id: clock.id,
        fail_at_cycle: 4,
      });
      assert.deepEqual([beyond.status, beyond.body], [422, {
        errors: { fail_at_cycle: ["must be less than or equal to cycles (3)"] },
      }]);
      const hourly = await company.post("/api/sandbox/subscriptions", {
        subject_id: person.id,
        cycles: 3,
        test_clock_id: clock.id,
        interval: "hour",
      });
      assert.deepEqual([hourly.status, hourly.body], [422, {
        errors: { interval: ["must be one of: day, week, month, year"] },
      }]);
      // a plain subscription answers as it always did: no clock fields
      const without = assertCreated(
        await company.post("/api/sandbox/subscriptions", { subject_id: person.id, cycles: 3 }),
      );
      assert.equal("test_clock_id" in without, false);
    });

    await t.step(`a clock holds at most ${MAX_SUBSCRIPTIONS_PER_CLOCK} subscriptions`, async () => {
      const clock = await newClock();
      for (let i = 0; i < MAX_SUBSCRIPTIONS_PER_CLOCK; i++) await subscribe(clock.id);
      const since = await lastEventId(ctx, company);
      const one = await company.post("/api/sandbox/subscriptions", {
        subject_id: person.id,
        cycles: 3,
        test_clock_id: clock.id,
      });
      assert.deepEqual([one.status, one.body], [422, {
        errors: {
          test_clock_id: [`has ${MAX_SUBSCRIPTIONS_PER_CLOCK} subscriptions already, the most a clock may have`],
        },
      }]);
      assert.deepEqual(await typesSince(ctx, company, since), [], "no subscription, no event");
    });

    await t.step("deleting a clock leaves its subscriptions, no longer charged on time", async () => {
      const clock = await newClock();
      const sub = await subscribe(clock.id);
      const res = await company.delete(`${CLOCKS}/${clock.id}`);
      assert.deepEqual([res.status, res.body], [200, { data: { id: clock.id, deleted: true } }]);
      assert.equal((await company.get(`${CLOCKS}/${clock.id}`)).status, 404);
      assert.equal((await advance(clock.id, "2027-01-01T00:00:00Z")).status, 404);
      assert.equal((await company.delete(`${CLOCKS}/${clock.id}`)).status, 404);
      const listed = (await company.get(CLOCKS)).body.data.map((c: { id: string }) => c.id);
      assert.equal(listed.includes(clock.id), false);
      const paid = assertCreated(await company.post(`/api/sandbox/subscriptions/${sub.id}/pay_invoice`));
      assert.equal(paid.paid_cycles, 1);
    });

    await t.step(`a company has at most ${MAX_CLOCKS_PER_COMPANY} clocks`, async () => {
      const other = await newCompany(ctx);
      for (let i = 0; i < MAX_CLOCKS_PER_COMPANY; i++) assertCreated(await other.post(CLOCKS, {}));
      const over = await other.post(CLOCKS, {});
      assert.deepEqual([over.status, over.body], [422, {
        errors: { detail: `a company may have at most ${MAX_CLOCKS_PER_COMPANY} test clocks; delete one first` },
      }]);
      const first = (await other.get(CLOCKS)).body.data[0].id;
      assert.equal((await other.delete(`${CLOCKS}/${first}`)).status, 200);
      assertCreated(await other.post(CLOCKS, {}));
    });

    await t.step("another company's clock answers as an unknown one, and cannot be used", async () => {
      const clock = await newClock();
      const sub = await subscribe(clock.id);
      const other = await newCompany(ctx);
      const stranger = await registerPerson(other);
      const notFound = { errors: { detail: "Not Found" } };
      for (
        const res of [
          await other.get(`${CLOCKS}/${clock.id}`),
          await other.post(`${CLOCKS}/${clock.id}/advance`, { frozen_time: "2027-01-01T00:00:00Z" }),
          await other.delete(`${CLOCKS}/${clock.id}`),
          await other.post("/api/sandbox/subscriptions", {
            subject_id: stranger.id,
            cycles: 3,
            test_clock_id: clock.id,
          }),
        ]
      ) assert.deepEqual([res.status, res.body], [404, notFound]);
      assert.deepEqual((await other.get(CLOCKS)).body.data, []);
      const [row] = await ctx.sql`select frozen_time from test_clocks where id = ${clock.id as string}`;
      assert.equal(row.frozen_time.toISOString(), "2026-01-31T12:00:00.000Z");
      const [s] = await ctx.sql`select paid_cycles from subscriptions where id = ${sub.id as string}`;
      assert.equal(s.paid_cycles, 0);
      assert.equal((await eventsOf(ctx, other)).length, 0, "the other company was sent nothing");
    });
  } finally {
    await ctx.close();
  }
});
