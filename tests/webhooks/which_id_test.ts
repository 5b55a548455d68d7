/**
 * Which id is which, as a receiver holding a body meets them (docs/webhooks.md, "Which id is which", issue 46): the
 * body's `id` and its `webhook-id` header are the delivery record's, which `GET /events/:id` finds; the record's
 * `event_id` lists the event's records at every endpoint; the body's `id` as an `event_id` finds nothing; the
 * transaction's id finds the records of the events about it. The path the docs describe, walked against the service.
 */
import assert from "node:assert/strict";
import { eventually, newCompany, setup } from "../support/helpers.ts";
import { createEndpoint, EVENTS } from "../support/endpoints.ts";
import { startReceiver } from "../support/webhook_receiver.ts";
import { registerPerson } from "../support/rails.ts";

Deno.test("which id is which: a body's id is its delivery record's, and leads to its event", async (t) => {
  const ctx = await setup("webhook_which_id", { worker: true });
  const rx = startReceiver();
  try {
    const company = await newCompany(ctx);
    const snapshot = await createEndpoint(company, `${rx.url}/snapshot`, { enabled_events: ["identified"] });
    const wrapped = await createEndpoint(company, `${rx.url}/wrapped`, {
      enabled_events: ["identified"],
      wrap_in_notification: true,
    });
    const person = await registerPerson(company);
    const payin = await company.post("/api/sandbox/payins", {
      subject_id: person.id,
      value: "150.00",
      currency: "BRL",
    });
    assert.equal(payin.status, 201, JSON.stringify(payin.body));
    const transactionId = payin.body.data.id;
    const [body] = await eventually("the snapshot body arrives", () => rx.at("/snapshot").length && rx.at("/snapshot"));
    const [plain] = await eventually("the wrapped body arrives", () => rx.at("/wrapped").length && rx.at("/wrapped"));

    await t.step("the body's id is its webhook-id header, and GET /events/:id answers that record", async () => {
      assert.equal(body.body.id, body.headers.get("webhook-id"));
      const record = await company.get(`${EVENTS}/${body.body.id}`);
      assert.equal(record.status, 200, JSON.stringify(record.body));
      assert.equal(record.body.data.id, body.body.id);
      assert.equal(record.body.data.endpoint_id, snapshot.id);
      assert.equal(body.body.data.transaction_id, transactionId);
    });

    await t.step("a wrapped body has no id; its webhook-id header is its record's", async () => {
      assert.equal(plain.body.notification.id, undefined);
      const record = await company.get(`${EVENTS}/${plain.headers.get("webhook-id")}`);
      assert.equal(record.status, 200, JSON.stringify(record.body));
      assert.equal(record.body.data.endpoint_id, wrapped.id);
    });

    await t.step(
      "the record's event_id lists the event's records at both endpoints; a body's id lists none",
      async () => {
        const eventId = (await company.get(`${EVENTS}/${body.body.id}`)).body.data.event_id;
        assert.notEqual(eventId, body.body.id);
        const records = (await company.get(`${EVENTS}?event_id=${eventId}`)).body.data;
        assert.deepEqual(
          records.map((r: { id: string }) => r.id).sort(),
          [body.body.id, plain.headers.get("webhook-id")].sort(),
        );
        assert.deepEqual((await company.get(`${EVENTS}?event_id=${body.body.id}`)).body, { data: [] });
      },
    );

    await t.step("the transaction's id lists the records of the events about it", async () => {
      const records = (await company.get(`${EVENTS}?transaction_id=${transactionId}`)).body.data;
      assert.ok(records.some((r: { id: string }) => r.id === body.body.id), JSON.stringify(records));
    });
  } finally {
    await rx.close();
    await ctx.close();
  }
});
