/**
 * The story a test clock is for (docs/sandbox.md, "Test clocks"): an integrator points a real receiver at the service,
 * puts two subscriptions and a PIX charge on a clock and advances it three months in one call; the receiver gets, signed
 * and in order, the invoices, the activations, the expiry, the completion and the cancellation those months would have
 * brought, and nothing goes to another company. Its own file because it runs the worker and a receiver on loopback.
 */
import assert from "node:assert/strict";
import { verifySignature } from "../../domain/webhooks/endpoints/signature.ts";
import { eventually, newCompany, setup } from "../support/helpers.ts";
import { assertCreated, registerPerson } from "../support/rails.ts";
import { createEndpoint, recordsOf } from "../support/endpoints.ts";
import { hmac, startReceiver } from "../support/webhook_receiver.ts";

/** Which subscription (or, for a payment event, which transaction) an event is about. */
// deno-lint-ignore no-explicit-any
const aboutOf = (data: any): string => data.invoice?.subscription_id ?? data.subscription?.id ?? data.transaction_id;

Deno.test("advancing a test clock three months delivers that quarter's events, signed and in order", async () => {
  const ctx = await setup("webhook_test_clock", { worker: true });
  const secrets = new Map<string, string>();
  const badSignatures: string[] = [];
  const receiver = startReceiver(async (arrival) => {
    const secret = secrets.get(arrival.path) ?? "";
    // the service's own verifier, and the recipe of docs/webhooks.md by hand with node:crypto
    const [, t, v1] = /^t=(\d+),v1=([0-9a-f]{64})/.exec(arrival.signature ?? "") ?? [];
    const byHand = t !== undefined && hmac(secret, Number(t), arrival.raw) === v1;
    if (!(await verifySignature(arrival.raw, arrival.signature, secret)) || !byHand) {
      badSignatures.push(arrival.raw);
      return new Response("bad signature", { status: 400 });
    }
    return new Response("ok");
  });
  try {
    const company = await newCompany(ctx);
    const endpoint = await createEndpoint(company, `${receiver.url}/clock`, { delivery_mode: "sequential" });
    secrets.set("/clock", endpoint.secret);
    const bystander = await newCompany(ctx);
    const elsewhere = await createEndpoint(bystander, `${receiver.url}/bystander`);
    secrets.set("/bystander", elsewhere.secret);

    const person = await registerPerson(company);
    const clock = assertCreated(
      await company.post("/api/sandbox/test_clocks", { name: "first quarter", frozen_time: "2026-01-01T00:00:00Z" }),
    );
    const subscribe = async (more: Record<string, unknown>) =>
      assertCreated(
        await company.post("/api/sandbox/subscriptions", { subject_id: person.id, test_clock_id: clock.id, ...more }),
      );
    // a three-month plan, and a yearly one whose third invoice the payer's bank will not pay
    const plan = await subscribe({ cycles: 3 });
    const yearly = await subscribe({ cycles: 12, fail_at_cycle: 3 });
    // and a PIX charge nobody pays, due mid-February
    const charge = assertCreated(
      await company.post("/api/sandbox/pix_charges", {
        subject_id: person.id,
        value: "45.00",
        test_clock_id: clock.id,
        expires_at: "2026-02-15T00:00:00Z",
      }),
    );
    await eventually("both QR codes at the receiver", () => receiver.at("/clock").length === 2);

    const advanced = await company.post(`/api/sandbox/test_clocks/${clock.id}/advance`, {
      frozen_time: "2026-04-01T00:00:00Z",
    });
    const moved = assertCreated(advanced);
    assert.equal(moved.frozen_time, "2026-04-01T00:00:00.000Z");
    assert.deepEqual(
      (moved.steps as { at: string; outcome: string }[]).map((s) => [s.at.slice(0, 10), s.outcome]),
      [
        ["2026-02-01", "paid"],
        ["2026-02-01", "paid"],
        ["2026-02-15", "expired"],
        ["2026-03-01", "paid"],
        ["2026-03-01", "paid"],
        ["2026-04-01", "paid"],
        ["2026-04-01", "failed"],
      ],
    );

    const expected: [string, string][] = [
      ["subscription_qr_code_generated", plan.id as string],
      ["subscription_qr_code_generated", yearly.id as string],
      // 1 February: both first invoices, each activating its subscription
      ["invoice_paid", plan.id as string],
      ["subscription_activated", plan.id as string],
      ["invoice_paid", yearly.id as string],
      ["subscription_activated", yearly.id as string],
      // 15 February: the charge expires unpaid
      ["payment_expired", charge.id as string],
      // 1 March
      ["invoice_paid", plan.id as string],
      ["invoice_paid", yearly.id as string],
      // 1 April: the plan's last invoice completes it; the yearly one's third is not paid
      ["invoice_paid", plan.id as string],
      ["subscription_completed", plan.id as string],
      ["subscription_canceled", yearly.id as string],
    ];
    await eventually("the quarter's events at the receiver", () => receiver.at("/clock").length >= expected.length);
    const arrivals = receiver.at("/clock");
    assert.deepEqual(arrivals.map((a) => [a.body.type, aboutOf(a.body.data)]), expected);
    assert.deepEqual(badSignatures, [], "every delivery verified");
    assert.equal(receiver.maxInFlight("/clock"), 1, "sequential: one at a time");

    assert.deepEqual(arrivals[6].body.data, { transaction_id: charge.id });
    const canceled = arrivals.at(-1)!.body.data.subscription;
    assert.deepEqual(canceled, {
      canceled_by_payer: false,
      canceled_reason: "invoice of cycle 3 was not paid",
      id: yearly.id,
      status: "canceled",
      subject_id: person.id,
    });
    const invoices = arrivals.filter((a) => a.body.type === "invoice_paid").map((a) => a.body.data.invoice);
    assert.equal(new Set(invoices.map((i) => i.id)).size, 5, "one invoice per paid cycle");
    for (const invoice of invoices) assert.deepEqual([invoice.status, invoice.subject_id], ["paid", person.id]);

    // each arrival is a delivery record the integrator can look up, all succeeded
    const records = await eventually("every record succeeded", async () => {
      const all = await recordsOf(company, endpoint.id);
      return all.length === expected.length && all.every((r) => r.status === "succeeded") ? all : null;
    });
    assert.deepEqual(records.map((r) => r.id), arrivals.map((a) => a.body.id));

    // the clock's subscriptions as the clock now shows them
    const shown = (await company.get(`/api/sandbox/test_clocks/${clock.id}`)).body.data;
    assert.deepEqual(
      shown.subscriptions.map((s: Record<string, unknown>) => [s.id, s.status, s.paid_cycles, s.next_invoice_at]),
      [[plan.id, "completed", 3, null], [yearly.id, "canceled", 2, null]],
    );
    assert.deepEqual(shown.pix_charges.map((c: Record<string, unknown>) => [c.id, c.status]), [[charge.id, "expired"]]);
    assert.equal(shown.next_step_at, null);
    assert.equal(receiver.at("/bystander").length, 0, "another company's endpoint got nothing");
  } finally {
    await ctx.close();
    await receiver.close();
  }
});
