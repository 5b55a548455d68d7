/**
 * Ed25519 endpoints: signing against RFC 8032's vectors, receivers verifying with the public key alone, rotation
 * and the switch from hmac, and private keys stored sealed.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { createPrivateKey, createPublicKey, type KeyObject, verify } from "node:crypto";
import { Webhook } from "standardwebhooks";
import { emitEvent } from "../../domain/webhooks/outbox/events.ts";
import { signEd25519, standardWebhookHeaders, verifySignature } from "../../domain/webhooks/endpoints/signature.ts";
import { createSecretBox } from "../../domain/infra/secret_box.ts";
import type { EndpointRow } from "../../domain/webhooks/endpoints/endpoint_row.ts";
import { openSigningKeys, sealStoredSecrets } from "../../domain/webhooks/endpoints/credentials.ts";
import { type Company, eventually, newCompany, setup } from "../support/helpers.ts";
import { createEndpoint, ENDPOINTS, recordsOf } from "../support/endpoints.ts";
import { type Arrival, type Receiver, seqId, startReceiver } from "../support/webhook_receiver.ts";

type Recipe = {
  publicKeyFrom: (whpk: string) => KeyObject;
  verifyEd25519Webhook: (raw: string, headers: Headers, keys: KeyObject[], toleranceSeconds?: number) => boolean;
};

/** The `// verify_ed25519_webhook.ts` block of docs/webhooks.md, written out and imported as a receiver would. */
async function recipe(): Promise<Recipe> {
  const doc = await Deno.readTextFile(new URL("../../docs/webhooks.md", import.meta.url));
  const block = [...doc.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1])
    .find((code) => code.startsWith("// verify_ed25519_webhook.ts\n"));
  assert.ok(block, "docs/webhooks.md has the verify_ed25519_webhook.ts recipe");
  const path = await Deno.makeTempFile({ suffix: ".ts" });
  await Deno.writeTextFile(path, block);
  try {
    return await import(`file://${path}`) as Recipe;
  } finally {
    await Deno.remove(path);
  }
}

/** RFC 8032, 7.1, TEST 1 and TEST 2: the private key (seed), its public key, a message and its signature. */
const RFC8032 = [
  {
    seed: "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
    publicKey: "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a",
    message: "",
    signature:
      "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b",
  },
  {
    seed: "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
    publicKey: "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c",
    message: "72",
    signature:
      "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00",
  },
];
const whsk = (seedHex: string) => `whsk_${Uint8Array.fromHex(seedHex).toBase64()}`;

Deno.test("Ed25519 signing matches RFC 8032's test vectors, and v1a signs <id>.<timestamp>.<body>", () => {
  for (const v of RFC8032) {
    const message = new TextDecoder().decode(Uint8Array.fromHex(v.message));
    assert.equal(Uint8Array.fromBase64(signEd25519(whsk(v.seed), message)).toHex(), v.signature);
  }
  const [v] = RFC8032;
  const headers = standardWebhookHeaders("msg_1", 1674087231, '{"a":1}', ["s".repeat(64)], {
    signingKeys: [whsk(v.seed)],
    asymmetricFirst: true,
  });
  const [first, second] = headers["webhook-signature"].split(" ");
  assert.match(second, /^v1,/);
  const signature = Buffer.from(first.replace(/^v1a,/, ""), "base64");
  const publicKey = createPublicKey({
    key: { kty: "OKP", crv: "Ed25519", x: Uint8Array.fromHex(v.publicKey).toBase64({ alphabet: "base64url" }) },
    format: "jwk",
  });
  assert.ok(verify(null, Buffer.from('msg_1.1674087231.{"a":1}'), publicKey, signature));
  assert.ok(!verify(null, Buffer.from('msg_1.1674087232.{"a":1}'), publicKey, signature));
});

Deno.test("Ed25519 endpoints: receivers verify with the published public key alone", async (t) => {
  const ctx = await setup("ed25519_signatures", { worker: true, env: { WEBHOOK_RETRY_SCHEDULE: "0.05" } });
  const { publicKeyFrom, verifyEd25519Webhook } = await recipe();
  // What each receiver path holds: the public keys it was given from the API, nothing else. It answers 204 only
  // to a delivery those keys verify, so a record that succeeded is one the receiver verified.
  const trusted = new Map<string, KeyObject[]>();
  const rx = startReceiver((a) => {
    const keys = trusted.get(a.path);
    if (!keys) return new Response(null, { status: 204 }); // a path that verifies nothing by itself
    return new Response(null, { status: verifyEd25519Webhook(a.raw, a.headers, keys) ? 204 : 400 });
  });
  const emit = (company: Company, n: number) =>
    ctx.sql.begin((tx) => emitEvent(tx, company.id, "identified", { transaction_id: seqId(n) }));
  const arrivalsAt = async (r: Receiver, path: string, count: number): Promise<Arrival[]> => {
    await eventually(`${count} arrival(s) at ${path}`, () => r.at(path).length >= count);
    return r.at(path);
  };
  const signaturesOf = (a: Arrival) => a.headers.get("webhook-signature")!.split(" ");
  /** node:crypto's own check of one `v1a,` signature with one public key, as any verifier would do it. */
  const v1aVerifies = (a: Arrival, signature: string, key: KeyObject) =>
    verify(
      null,
      Buffer.from(`${a.headers.get("webhook-id")}.${a.headers.get("webhook-timestamp")}.${a.raw}`),
      key,
      Buffer.from(signature.replace(/^v1a,/, ""), "base64"),
    );

  const company = await newCompany(ctx);
  // deno-lint-ignore no-explicit-any
  let endpoint: any;
  const answers: string[] = [];
  try {
    await t.step("an ed25519 endpoint publishes a whpk_ public key and has no shared secret", async () => {
      endpoint = await createEndpoint(company, `${rx.url}/ed`, { signature_scheme: "ed25519" });
      answers.push(JSON.stringify(endpoint));
      assert.equal(endpoint.signature_scheme, "ed25519");
      assert.equal(endpoint.secret, null);
      assert.deepEqual([endpoint.previous_secrets, endpoint.previous_public_keys], [[], []]);
      assert.match(endpoint.public_key, /^whpk_[A-Za-z0-9+/]{43}=$/);
      assert.equal(Uint8Array.fromBase64(endpoint.public_key.slice(5)).length, 32);
      const shown = await company.get(`${ENDPOINTS}/${endpoint.id}`);
      answers.push(JSON.stringify(shown.body));
      assert.equal(shown.body.data.public_key, endpoint.public_key);

      const hmac = await createEndpoint(await newCompany(ctx), `${rx.url}/hmac`);
      assert.deepEqual([hmac.signature_scheme, hmac.public_key, hmac.previous_public_keys], ["hmac-sha256", null, []]);
      assert.match(hmac.secret, /^[0-9a-f]{64}$/);
    });

    await t.step("a receiver holding only the public key verifies the delivery with node:crypto", async () => {
      trusted.set("/ed", [publicKeyFrom(endpoint.public_key)]);
      await emit(company, 1);
      const [arrival] = await arrivalsAt(rx, "/ed", 1);
      await eventually(
        "the record succeeded",
        async () => (await recordsOf(company, endpoint.id))[0]?.status === "succeeded",
      );

      assert.equal(arrival.signature, null, "no service-signature: that header is an HMAC");
      const signatures = signaturesOf(arrival);
      assert.equal(signatures.length, 1);
      assert.match(signatures[0], /^v1a,[A-Za-z0-9+/]{86}==$/);
      assert.equal(arrival.headers.get("webhook-id"), arrival.body.id);
      assert.ok(v1aVerifies(arrival, signatures[0], publicKeyFrom(endpoint.public_key)));

      const keys = [publicKeyFrom(endpoint.public_key)];
      assert.equal(verifyEd25519Webhook(arrival.raw.replace(seqId(1), seqId(2)), arrival.headers, keys), false);
      const otherId = new Headers(arrival.headers);
      otherId.set("webhook-id", crypto.randomUUID());
      assert.equal(verifyEd25519Webhook(arrival.raw, otherId, keys), false);
      const late = new Headers(arrival.headers);
      late.set("webhook-timestamp", String(Number(arrival.headers.get("webhook-timestamp")) - 600));
      assert.equal(verifyEd25519Webhook(arrival.raw, late, keys), false);
      const other = await createEndpoint(await newCompany(ctx), `${rx.url}/other`, { signature_scheme: "ed25519" });
      assert.notEqual(other.public_key, endpoint.public_key);
      assert.equal(verifyEd25519Webhook(arrival.raw, arrival.headers, [publicKeyFrom(other.public_key)]), false);
      // a key made anew by node:crypto itself is no better
      const stranger = createPublicKey(createPrivateKey({
        key: Buffer.concat([Buffer.from("302e020100300506032b657004220420", "hex"), Buffer.alloc(32, 7)]),
        format: "der",
        type: "pkcs8",
      }));
      assert.equal(verifyEd25519Webhook(arrival.raw, arrival.headers, [stranger]), false);
    });

    await t.step("no secret can be put in an ed25519 endpoint's body (422)", async () => {
      const another = await newCompany(ctx);
      const created = await another.post(ENDPOINTS, {
        url: `${rx.url}/inject`,
        signature_scheme: "ed25519",
        inject_secret_in_body: true,
      });
      assert.equal(created.status, 422);
      assert.deepEqual(Object.keys(created.body.errors), ["inject_secret_in_body"]);
      const updated = await company.put(`${ENDPOINTS}/${endpoint.id}`, { inject_secret_in_body: true });
      assert.equal(updated.status, 422);
      assert.match(updated.body.errors.inject_secret_in_body[0], /ed25519/);
      const injecting = await createEndpoint(another, `${rx.url}/injecting`, { inject_secret_in_body: true });
      const switched = await another.put(`${ENDPOINTS}/${injecting.id}`, { signature_scheme: "ed25519" });
      assert.equal(switched.status, 422);
      assert.equal((await another.get(`${ENDPOINTS}/${injecting.id}`)).body.data.signature_scheme, "hmac-sha256");
    });

    await t.step("after rotate_secret both keys sign for 24 hours: receivers holding either verify", async () => {
      const old = endpoint.public_key;
      const rotated = await company.post(`${ENDPOINTS}/${endpoint.id}/rotate_secret`);
      assert.equal(rotated.status, 200);
      answers.push(JSON.stringify(rotated.body));
      const r = rotated.body.data;
      assert.equal(r.secret, null);
      assert.match(r.public_key, /^whpk_[A-Za-z0-9+/]{43}=$/);
      assert.notEqual(r.public_key, old);
      assert.equal(r.previous_public_keys.length, 1);
      assert.equal(r.previous_public_keys[0].public_key, old);
      const hours = (Date.parse(r.previous_public_keys[0].expires_at) - Date.now()) / 3_600_000;
      assert.ok(hours > 23.9 && hours <= 24, `expires in ${hours} h`);
      const shown = (await company.get(`${ENDPOINTS}/${endpoint.id}`)).body.data;
      assert.deepEqual([shown.public_key, shown.previous_public_keys], [r.public_key, r.previous_public_keys]);

      // the receiver still holds the old key only: the delivery succeeds all the same
      await emit(company, 3);
      const [, arrival] = await arrivalsAt(rx, "/ed", 2);
      await eventually(
        "both records succeeded",
        async () => (await recordsOf(company, endpoint.id)).filter((d) => d.status === "succeeded").length === 2,
      );
      const [current, previous] = signaturesOf(arrival);
      assert.ok(v1aVerifies(arrival, current, publicKeyFrom(r.public_key)), "the new key's signature comes first");
      assert.ok(v1aVerifies(arrival, previous, publicKeyFrom(old)));
      assert.ok(verifyEd25519Webhook(arrival.raw, arrival.headers, [publicKeyFrom(r.public_key)]));
      assert.ok(verifyEd25519Webhook(arrival.raw, arrival.headers, [publicKeyFrom(old)]));
      endpoint = shown;
    });

    await t.step("the private keys are stored sealed, never shown, and reseal with a new encryption key", async () => {
      assert.ok(answers.every((a) => !a.includes("whsk_")), "a private key in an answer");
      const [row] = await ctx.sql`
        select sealed_signing_key, previous_signing_keys from webhook_endpoints where id = ${endpoint.id}`;
      assert.match(row.sealed_signing_key, /^enc:v1:[0-9a-f]{8}:/);
      assert.match(row.previous_signing_keys[0].secret_key, /^enc:v1:[0-9a-f]{8}:/);
      assert.ok(!JSON.stringify(row).includes("whsk_"));

      const serviceKey = ctx.config.secretEncryptionKey!;
      const before = await openSigningKeys(await createSecretBox(serviceKey), await fullRow(endpoint.id));
      assert.equal(before.length, 2, "the current key and the one rotated away");
      const newKey = crypto.getRandomValues(new Uint8Array(32));
      const rotatedBox = await createSecretBox(newKey, [serviceKey]);
      assert.ok(await sealStoredSecrets(ctx.sql, rotatedBox, { reseal: true }) >= 1);
      const resealed = await fullRow(endpoint.id);
      assert.ok(resealed.sealed_signing_key.startsWith(rotatedBox.currentPrefix));
      assert.ok(resealed.previous_signing_keys.every((k) => k.secret_key.startsWith(rotatedBox.currentPrefix)));
      // the new encryption key alone opens them: the previous one can be retired
      assert.deepEqual(await openSigningKeys(await createSecretBox(newKey), resealed), before);
      await assert.rejects(openSigningKeys(await createSecretBox(serviceKey), resealed));
      // back under the service's own key, which the worker delivers with
      await sealStoredSecrets(ctx.sql, await createSecretBox(serviceKey, [newKey]), { reseal: true });
    });

    await t.step("switching an hmac endpoint to ed25519 keeps its secret signing for 24 hours", async () => {
      const company = await newCompany(ctx);
      const hmac = await createEndpoint(company, `${rx.url}/switch`);
      const res = await company.put(`${ENDPOINTS}/${hmac.id}`, { signature_scheme: "ed25519" });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      const e = res.body.data;
      assert.deepEqual([e.signature_scheme, e.secret, e.previous_secret], ["ed25519", null, hmac.secret]);
      assert.match(e.public_key, /^whpk_/);
      trusted.set("/switch", [publicKeyFrom(e.public_key)]);

      await emit(company, 4);
      const [arrival] = await arrivalsAt(rx, "/switch", 1);
      assert.deepEqual(signaturesOf(arrival).map((s) => s.split(",")[0]), ["v1a", "v1"]);
      // a receiver not yet moved to the public key still verifies with the secret, under both HMAC headers
      assert.deepEqual(
        new Webhook(hmac.secret, { format: "raw" }).verify(arrival.raw, Object.fromEntries(arrival.headers)),
        arrival.body,
      );
      assert.ok(await verifySignature(arrival.raw, arrival.signature, hmac.secret));
      assert.ok(verifyEd25519Webhook(arrival.raw, arrival.headers, [publicKeyFrom(e.public_key)]));

      // and back: a new secret, the key pair signing 24 hours more
      const back = (await company.put(`${ENDPOINTS}/${hmac.id}`, { signature_scheme: "hmac-sha256" })).body.data;
      assert.equal(back.signature_scheme, "hmac-sha256");
      assert.match(back.secret, /^[0-9a-f]{64}$/);
      assert.notEqual(back.secret, hmac.secret);
      assert.deepEqual([back.public_key, back.previous_public_keys[0].public_key], [null, e.public_key]);
      await emit(company, 5);
      const [, again] = await arrivalsAt(rx, "/switch", 2);
      assert.deepEqual(signaturesOf(again).map((s) => s.split(",")[0]), ["v1", "v1", "v1a"]);
      assert.ok(await verifySignature(again.raw, again.signature, back.secret));
      assert.ok(verifyEd25519Webhook(again.raw, again.headers, [publicKeyFrom(e.public_key)]));
    });
  } finally {
    await rx.close();
    await ctx.close();
  }

  async function fullRow(id: string) {
    const [row] = await ctx.sql`select * from webhook_endpoints where id = ${id}`;
    return row as EndpointRow & { sealed_signing_key: string };
  }
});
