/**
 * Subscriptions through the sandbox: pending, active and completed over their invoices, cancelled by the merchant
 * or the payer, bad bodies and another company's ids.
 */
import assert from "node:assert/strict";
import { newCompany, setup } from "../support/helpers.ts";
import { assertCreated, eventsOf, lastEventId, registerPerson, typesSince } from "../support/rails.ts";

Deno.test("subscriptions: pending, active, completed; cancelled by the merchant or by the payer", async (t) => {
  const ctx = await setup("rails_subscriptions");
  const company = await newCompany(ctx);
  try {
    const person = await registerPerson(company);
    const create = async (cycles: number) =>
      assertCreated(await company.post("/api/sandbox/subscriptions", { subject_id: person.id, cycles }));
    const pay = (id: unknown) => company.post(`/api/sandbox/subscriptions/${id}/pay_invoice`);

    await t.step("three cycles: pending → active on the first invoice → completed on the last", async () => {
      let since = await lastEventId(ctx, company);
      const sub = await create(3);
      assert.deepEqual([sub.status, sub.paid_cycles, sub.canceled_by_payer], ["pending", 0, false]);
      assert.match(sub.qr_code as string, /^000201.*6304[0-9A-F]{4}$/);
      assert.deepEqual(await typesSince(ctx, company, since), ["subscription_qr_code_generated"]);

      since = await lastEventId(ctx, company);
      const first = assertCreated(await pay(sub.id));
      assert.deepEqual([first.status, first.paid_cycles], ["active", 1]);
      assert.deepEqual(await typesSince(ctx, company, since), ["invoice_paid", "subscription_activated"]);
      const invoice = first.invoice as Record<string, unknown>;
      const [paid] = (await eventsOf(ctx, company, "invoice_paid")).filter((e) => e.id > since!);
      assert.deepEqual(paid.data, { invoice });

      since = await lastEventId(ctx, company);
      const second = assertCreated(await pay(sub.id));
      assert.deepEqual([second.status, second.paid_cycles], ["active", 2]);
      assert.deepEqual(await typesSince(ctx, company, since), ["invoice_paid"]);

      since = await lastEventId(ctx, company);
      const third = assertCreated(await pay(sub.id));
      assert.deepEqual([third.status, third.paid_cycles], ["completed", 3]);
      assert.deepEqual(await typesSince(ctx, company, since), ["invoice_paid", "subscription_completed"]);
      const invoices = (await eventsOf(ctx, company, "invoice_paid")).map((e) => e.data.invoice as { id: string });
      assert.equal(new Set(invoices.map((i) => i.id)).size, invoices.length, "one invoice per cycle");

      const after = await pay(sub.id);
      assert.deepEqual([after.status, after.body], [422, { errors: { status: ["is completed"] } }]);
    });

    await t.step("cancelled by the merchant: canceled_by_payer false", async () => {
      const sub = await create(12);
      assertCreated(await pay(sub.id));
      const since = await lastEventId(ctx, company);
      const canceled = assertCreated(
        await company.post(`/api/sandbox/subscriptions/${sub.id}/cancel`, { by_payer: false, reason: "plan ended" }),
      );
      assert.deepEqual([canceled.status, canceled.canceled_by_payer, canceled.canceled_reason], [
        "canceled",
        false,
        "plan ended",
      ]);
      assert.deepEqual(await typesSince(ctx, company, since), ["subscription_canceled"]);
      const [event] = (await eventsOf(ctx, company, "subscription_canceled")).filter((e) => e.id > since!);
      assert.deepEqual(event.data.subscription, {
        canceled_by_payer: false,
        canceled_reason: "plan ended",
        id: sub.id,
        status: "canceled",
        subject_id: person.id,
      });
      const payAfter = await pay(sub.id);
      assert.deepEqual([payAfter.status, payAfter.body], [422, { errors: { status: ["is canceled"] } }]);
      const twice = await company.post(`/api/sandbox/subscriptions/${sub.id}/cancel`, {});
      assert.equal(twice.status, 422);
    });

    await t.step("cancelled by the payer while still pending", async () => {
      const sub = await create(2);
      const since = await lastEventId(ctx, company);
      assertCreated(
        await company.post(`/api/sandbox/subscriptions/${sub.id}/cancel`, { by_payer: true, reason: "revoked in app" }),
      );
      const [event] = (await eventsOf(ctx, company, "subscription_canceled")).filter((e) => e.id > since!);
      assert.deepEqual(event.data.subscription, {
        canceled_by_payer: true,
        canceled_reason: "revoked in app",
        id: sub.id,
        status: "canceled",
        subject_id: person.id,
      });
    });

    await t.step("a cancel without a body is the merchant's, with an empty reason", async () => {
      const sub = await create(2);
      const res = await company.call("POST", `/api/sandbox/subscriptions/${sub.id}/cancel`);
      const canceled = assertCreated(res);
      assert.deepEqual([canceled.canceled_by_payer, canceled.canceled_reason], [false, ""]);
    });

    await t.step("bad bodies name the field", async () => {
      const noCycles = await company.post("/api/sandbox/subscriptions", { subject_id: person.id });
      assert.deepEqual([noCycles.status, noCycles.body], [400, { errors: { cycles: ["can't be blank"] } }]);
      const zero = await company.post("/api/sandbox/subscriptions", { subject_id: person.id, cycles: 0 });
      assert.deepEqual([zero.status, Object.keys(zero.body.errors)], [422, ["cycles"]]);
      const sub = await create(1);
      const flag = await company.post(`/api/sandbox/subscriptions/${sub.id}/cancel`, { by_payer: "yes" });
      assert.deepEqual([flag.status, flag.body], [422, {
        errors: { by_payer: ["is invalid: must be true or false"] },
      }]);
    });

    await t.step("another company's subscription or subject is not found", async () => {
      const sub = await create(2);
      const other = await newCompany(ctx);
      for (const path of ["pay_invoice", "cancel"]) {
        const res = await other.post(`/api/sandbox/subscriptions/${sub.id}/${path}`, {});
        assert.deepEqual([res.status, res.body], [404, { errors: { detail: "Not Found" } }], path);
      }
      const foreignSubject = await other.post("/api/sandbox/subscriptions", { subject_id: person.id, cycles: 1 });
      assert.equal(foreignSubject.status, 404);
      const [row] = await ctx.sql`select status, paid_cycles from subscriptions where id = ${sub.id as string}`;
      assert.deepEqual([row.status, row.paid_cycles], ["pending", 0]);
    });
  } finally {
    await ctx.close();
  }
});
