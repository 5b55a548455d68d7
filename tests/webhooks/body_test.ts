/**
 * Delivery bodies on their own (no database): the combinations of endpoint settings that signature_test.ts
 * does not cover, and the guarantee that event data can never disguise the envelope.
 */
import assert from "node:assert/strict";
import { renderBody } from "../../domain/webhooks/engine/body.ts";

type Settings = Parameters<typeof renderBody>[0];
const SECRET = "f".repeat(64);
const settings = (o: Partial<Settings> = {}): Settings => ({
  event_payload_type: "snapshot",
  wrap_in_notification: false,
  inject_secret_in_body: false,
  event_mapping: null,
  secret: SECRET,
  ...o,
});

// data that tries to look like the envelope: its own type, id, secret and notification keys
const delivery = {
  id: "0190c0de-0000-7000-8000-000000000001",
  type: "payment_approved",
  data: {
    transaction_id: "t1",
    type: "fake_type",
    id: "data-id",
    secret: "data-secret",
    notification: { type: "x" },
    value: "10.50",
    nested: { list: [1, "two", null], flag: false },
  },
};

const render = (o: Partial<Settings>) => JSON.parse(renderBody(settings(o), delivery));

Deno.test("delivery bodies: event data never overrides the envelope", async (t) => {
  await t.step("snapshot: the data travels untouched under `data`, beside the record id and the real type", () => {
    assert.deepEqual(render({}), { id: delivery.id, type: "payment_approved", data: delivery.data });
  });

  await t.step("wrapped: data keys are spread, but `type` and `secret` stay the envelope's", () => {
    const { type: _type, secret: _secret, ...rest } = delivery.data;
    assert.deepEqual(render({ wrap_in_notification: true }), { notification: { type: "payment_approved", ...rest } });
    assert.deepEqual(render({ wrap_in_notification: true, inject_secret_in_body: true }), {
      notification: { type: "payment_approved", ...rest, secret: SECRET },
    });
  });

  await t.step("thin with the secret: {id, type, secret}; wrapped thin: {notification: {type, id, secret}}", () => {
    assert.deepEqual(render({ event_payload_type: "thin", inject_secret_in_body: true }), {
      id: delivery.id,
      type: "payment_approved",
      secret: SECRET,
    });
    assert.deepEqual(render({ event_payload_type: "thin", wrap_in_notification: true, inject_secret_in_body: true }), {
      notification: { type: "payment_approved", id: delivery.id, secret: SECRET },
    });
  });

  await t.step("event_mapping renames the type in every format, and only the mapped type", () => {
    const event_mapping = { payment_approved: "charge.succeeded", payment_failed: "charge.failed" };
    assert.equal(render({ event_mapping }).type, "charge.succeeded");
    assert.equal(render({ event_mapping, event_payload_type: "thin" }).type, "charge.succeeded");
    assert.equal(render({ event_mapping, wrap_in_notification: true }).notification.type, "charge.succeeded");
    assert.equal(render({ event_mapping: { payment_failed: "charge.failed" } }).type, "payment_approved");
    assert.equal(render({ event_mapping: {} }).type, "payment_approved");
  });

  await t.step("the body is one line of JSON: the exact bytes that get signed", () => {
    const body = renderBody(settings(), { ...delivery, data: { text: 'línea\nnueva \u2028 "quoted"' } });
    assert.equal(body.includes("\n"), false);
    assert.deepEqual(JSON.parse(body).data, { text: 'línea\nnueva \u2028 "quoted"' });
  });
});
