/**
 * Our `service-signature` header as a receiver checks it with a widely used library: Stripe's verifier reads the
 * same `t=<unix>,v1=<hex HMAC-SHA256 of "<t>.<body>">` form, so integrators can verify with it unchanged.
 */
import assert from "node:assert/strict";
import Stripe from "stripe";
import { renderBody } from "../../domain/webhooks/engine/body.ts";
import { signPayload } from "../../domain/webhooks/endpoints/signature.ts";

const SECRET = "9f".repeat(32);
const OLD_SECRET = "a1".repeat(32);
// No API call is made: the key only satisfies the constructor.
const webhooks = new Stripe("sk_test_verification_only").webhooks;

/** A body as the sender renders it, and the header it would carry. */
async function delivery(opts: { previousSecrets?: readonly string[]; timestamp?: number } = {}) {
  const body = renderBody(
    {
      event_payload_type: "snapshot",
      wrap_in_notification: false,
      inject_secret_in_body: false,
      event_mapping: null,
      secret: SECRET,
    },
    {
      id: crypto.randomUUID(),
      type: "payment_approved",
      data: { transaction_id: "t-1", value: "1500.00", note: "ação ✓" },
    },
  );
  return { body, header: await signPayload(body, SECRET, opts) };
}

Deno.test("a receiver verifying with Stripe's library", async (t) => {
  await t.step("accepts the header and hands back the parsed body", async () => {
    const { body, header } = await delivery();
    assert.deepEqual(await webhooks.constructEventAsync(body, header, SECRET), JSON.parse(body));
  });

  await t.step("still accepts it during a rotation, with v0 beside v1", async () => {
    const { body, header } = await delivery({ previousSecrets: [OLD_SECRET] });
    assert.match(header, /,v0=[0-9a-f]{64}$/);
    assert.deepEqual(await webhooks.constructEventAsync(body, header, SECRET), JSON.parse(body));
  });

  await t.step("refuses a changed body, another secret and a signature older than five minutes", async () => {
    const { body, header } = await delivery();
    await assert.rejects(
      webhooks.constructEventAsync(body.replace("1500.00", "9500.00"), header, SECRET),
      /signature/i,
    );
    await assert.rejects(webhooks.constructEventAsync(body, header, OLD_SECRET), /signature/i);
    const old = await delivery({ timestamp: Math.floor(Date.now() / 1000) - 301 });
    await assert.rejects(webhooks.constructEventAsync(old.body, old.header, SECRET), /tolerance/i);
  });
});
