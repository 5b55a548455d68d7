/**
 * Standard Webhooks: receivers verify every delivery with the standardwebhooks package and the Web Crypto recipes of
 * docs/webhooks.md, for both signature schemes and across a rotation.
 */
import assert from "node:assert/strict";
import { Webhook } from "standardwebhooks";
import { emitEvent } from "../../domain/webhooks/outbox/events.ts";
import { type Company, eventually, newCompany, setup } from "../support/helpers.ts";
import { createEndpoint, ENDPOINTS } from "../support/endpoints.ts";
import { type Arrival, type Receiver, seqId, startReceiver } from "../support/webhook_receiver.ts";

/** A receiver's view of the headers, as the library takes them. */
const headersOf = (a: Arrival) => Object.fromEntries(a.headers);

/** The TypeScript block of docs/webhooks.md that starts with `// <file>`, written out and imported as a receiver would. */
async function recipe<T>(file: string): Promise<T> {
  const doc = await Deno.readTextFile(new URL("../../docs/webhooks.md", import.meta.url));
  const block = [...doc.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]).find((code) =>
    code.startsWith(`// ${file}\n`)
  );
  assert.ok(block, `docs/webhooks.md has a ${file} recipe`);
  const path = await Deno.makeTempFile({ suffix: ".ts" });
  await Deno.writeTextFile(path, block);
  try {
    return await import(`file://${path}`) as T;
  } finally {
    await Deno.remove(path);
  }
}

async function arrivalsAt(rx: Receiver, path: string, count: number): Promise<Arrival[]> {
  await eventually(`${count} arrival(s) at ${path}`, () => rx.at(path).length >= count);
  return rx.at(path);
}

Deno.test("Standard Webhooks: receivers verify every delivery with the standardwebhooks package", async (t) => {
  const ctx = await setup("standard_webhooks", { worker: true, env: { WEBHOOK_RETRY_SCHEDULE: "0.05" } });
  // /flaky fails its first attempt, so the record is attempted twice
  const rx = startReceiver((a, n) => new Response(`${n}`, { status: a.path === "/flaky" && n === 1 ? 500 : 200 }));
  const endpoint = async (company: Company, path: string) =>
    await createEndpoint(company, `${rx.url}${path}`) as { id: string; secret: string };
  const emit = (company: Company, transactionId: string) =>
    ctx.sql.begin((tx) => emitEvent(tx, company.id, "identified", { transaction_id: transactionId }));

  try {
    await t.step(
      "a delivery verifies with new Webhook(secret, {format: 'raw'}) and its id is the record id",
      async () => {
        const company = await newCompany(ctx);
        const { secret } = await endpoint(company, "/plain");
        await emit(company, seqId(1));
        const [arrival] = await arrivalsAt(rx, "/plain", 1);

        const verified = new Webhook(secret, { format: "raw" }).verify(arrival.raw, headersOf(arrival));
        assert.deepEqual(verified, arrival.body);
        assert.equal(arrival.headers.get("webhook-id"), arrival.body.id);
        const t0 = Number(arrival.signature!.match(/^t=(\d+),/)![1]);
        assert.equal(arrival.headers.get("webhook-timestamp"), String(t0));
        assert.match(arrival.headers.get("webhook-signature")!, /^v1,[A-Za-z0-9+/]{43}=$/);
      },
    );

    await t.step("a wrong secret, a changed body or another id is rejected", async () => {
      const [arrival] = rx.at("/plain");
      assert.throws(() => new Webhook("0".repeat(64), { format: "raw" }).verify(arrival.raw, headersOf(arrival)));
      const company = await newCompany(ctx);
      const { secret } = await endpoint(company, "/tampered");
      await emit(company, seqId(2));
      const [mine] = await arrivalsAt(rx, "/tampered", 1);
      const wh = new Webhook(secret, { format: "raw" });
      assert.throws(() => wh.verify(mine.raw.replace(seqId(2), seqId(3)), headersOf(mine)));
      assert.throws(() => wh.verify(mine.raw, { ...headersOf(mine), "webhook-id": crypto.randomUUID() }));
    });

    await t.step("every attempt of a record carries the same webhook-id, each signed afresh", async () => {
      const company = await newCompany(ctx);
      const { secret } = await endpoint(company, "/flaky");
      await emit(company, seqId(4));
      const [first, second] = await arrivalsAt(rx, "/flaky", 2);
      assert.equal(first.headers.get("webhook-id"), second.headers.get("webhook-id"));
      const wh = new Webhook(secret, { format: "raw" });
      for (const a of [first, second]) assert.deepEqual(wh.verify(a.raw, headersOf(a)), a.body);
    });

    await t.step("after rotate_secret, both the new and the old secret verify", async () => {
      const company = await newCompany(ctx);
      const old = await endpoint(company, "/rotated");
      const rotated = await company.post(`${ENDPOINTS}/${old.id}/rotate_secret`);
      assert.equal(rotated.status, 200);
      await emit(company, seqId(5));
      const [arrival] = await arrivalsAt(rx, "/rotated", 1);

      assert.equal(arrival.headers.get("webhook-signature")!.split(" ").length, 2);
      for (const secret of [rotated.body.data.secret, old.secret]) {
        assert.deepEqual(new Webhook(secret, { format: "raw" }).verify(arrival.raw, headersOf(arrival)), arrival.body);
      }
    });

    await t.step("the Web Crypto recipes of docs/webhooks.md verify real deliveries, for both schemes", async () => {
      const { verifyStandardWebhook } = await recipe<{
        verifyStandardWebhook: (raw: string, headers: Headers, secrets: string[]) => Promise<boolean>;
      }>("verify_standard_webhook.ts");
      const { verifyServiceSignature } = await recipe<{
        verifyServiceSignature: (raw: string, header: string | null, secrets: string[]) => Promise<boolean>;
      }>("verify_service_signature.ts");
      const company = await newCompany(ctx);
      const old = await endpoint(company, "/recipe");
      const rotated = (await company.post(`${ENDPOINTS}/${old.id}/rotate_secret`)).body.data;
      await emit(company, seqId(6));
      const [arrival] = await arrivalsAt(rx, "/recipe", 1);

      for (const secret of [rotated.secret, old.secret]) {
        assert.equal(await verifyStandardWebhook(arrival.raw, arrival.headers, [secret]), true);
        assert.equal(await verifyServiceSignature(arrival.raw, arrival.signature, [secret]), true);
      }
      const other = ["0".repeat(64)];
      assert.equal(await verifyStandardWebhook(arrival.raw, arrival.headers, other), false);
      assert.equal(await verifyServiceSignature(arrival.raw, arrival.signature, other), false);
      const changed = arrival.raw.replace(seqId(6), seqId(7));
      assert.equal(await verifyStandardWebhook(changed, arrival.headers, [rotated.secret]), false);
      assert.equal(await verifyServiceSignature(changed, arrival.signature, [rotated.secret]), false);
    });
  } finally {
    await rx.close();
    await ctx.close();
  }
});
