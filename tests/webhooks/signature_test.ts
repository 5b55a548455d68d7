/**
 * What a receiver checks and receives: the `service-signature` header and its verification, delivery bodies per
 * endpoint settings, and outbound requests kept from private addresses, redirects and slow or long answers.
 */
import assert from "node:assert/strict";
import { renderBody } from "../../domain/webhooks/engine/body.ts";
import { checkedAddresses, isPrivateAddress, systemResolver } from "../../domain/webhooks/endpoints/url_guard.ts";
import { parseSignatureHeader, signPayload, verifySignature } from "../../domain/webhooks/endpoints/signature.ts";
import { sendWebhook } from "../../domain/webhooks/engine/sender.ts";
import { EXAMPLE, hmac, startReceiver } from "../support/webhook_receiver.ts";

const SECRET = "a".repeat(64);
const OLD = "b".repeat(64);
const BODY = '{"id":"x","type":"identified","data":{"transaction_id":"t"}}';

Deno.test("signatures a receiver can verify", async (t) => {
  await t.step("the header is t=<unix>,v1=<HMAC-SHA256 of '<t>.<body>' in lowercase hex>", async () => {
    const header = await signPayload(BODY, SECRET, { timestamp: 1_800_000_000 });
    assert.equal(header, `t=1800000000,v1=${hmac(SECRET, 1_800_000_000, BODY)}`);
  });

  await t.step("with a previous secret, v0 signs the same text with it", async () => {
    const header = await signPayload(BODY, SECRET, { previousSecrets: [OLD], timestamp: 1_800_000_000 });
    assert.deepEqual(parseSignatureHeader(header), {
      t: 1_800_000_000,
      v1: hmac(SECRET, 1_800_000_000, BODY),
      v0: hmac(OLD, 1_800_000_000, BODY),
      v0s: [hmac(OLD, 1_800_000_000, BODY)],
    });
  });

  await t.step("verification accepts the current secret through v1", async () => {
    const header = await signPayload(BODY, SECRET);
    assert.equal(await verifySignature(BODY, header, SECRET), true);
    assert.equal(await verifySignature(BODY, header, [SECRET, OLD]), true);
  });

  await t.step("a receiver still holding only the old secret verifies through v0", async () => {
    const header = await signPayload(BODY, SECRET, { previousSecrets: [OLD] });
    assert.equal(await verifySignature(BODY, header, OLD), true);
    const withoutV0 = await signPayload(BODY, SECRET);
    assert.equal(await verifySignature(BODY, withoutV0, OLD), false);
  });

  await t.step("a changed body, a wrong secret or a malformed header fails", async () => {
    const header = await signPayload(BODY, SECRET);
    assert.equal(await verifySignature(BODY.replace('t"}', 'u"}'), header, SECRET), false);
    assert.equal(await verifySignature(BODY, header, "c".repeat(64)), false);
    for (const bad of [null, "", "v1=abc", "t=1,v1=zz", `t=abc,v1=${"0".repeat(64)}`, "garbage"]) {
      assert.equal(await verifySignature(BODY, bad, SECRET), false, String(bad));
    }
  });

  await t.step("a timestamp outside the tolerance fails; inside it passes", async () => {
    const now = 1_800_000_000;
    const old = await signPayload(BODY, SECRET, { timestamp: now - 301 });
    assert.equal(await verifySignature(BODY, old, SECRET, { now }), false);
    assert.equal(await verifySignature(BODY, old, SECRET, { now, toleranceSeconds: 600 }), true);
    const recent = await signPayload(BODY, SECRET, { timestamp: now - 299 });
    assert.equal(await verifySignature(BODY, recent, SECRET, { now }), true);
  });
});

Deno.test("delivery bodies per endpoint settings", () => {
  type Settings = Parameters<typeof renderBody>[0];
  const base: Settings = {
    event_payload_type: "snapshot",
    wrap_in_notification: false,
    inject_secret_in_body: false,
    event_mapping: null,
    secret: SECRET,
  };
  const delivery = {
    id: "d1",
    type: "subject_reproved",
    data: { subject_id: "s1", items: ["proof_of_address_missing"] },
  };
  const body = (settings: Partial<Settings>) => JSON.parse(renderBody({ ...base, ...settings }, delivery));

  assert.deepEqual(body({}), { id: "d1", type: "subject_reproved", data: delivery.data });
  assert.deepEqual(body({ event_payload_type: "thin" }), { id: "d1", type: "subject_reproved" });
  assert.deepEqual(body({ wrap_in_notification: true }), {
    notification: { type: "subject_reproved", subject_id: "s1", items: ["proof_of_address_missing"] },
  });
  assert.deepEqual(body({ wrap_in_notification: true, inject_secret_in_body: true }), {
    notification: { type: "subject_reproved", subject_id: "s1", items: ["proof_of_address_missing"], secret: SECRET },
  });
  assert.deepEqual(body({ inject_secret_in_body: true }), {
    id: "d1",
    type: "subject_reproved",
    data: delivery.data,
    secret: SECRET,
  });
  assert.deepEqual(body({ event_payload_type: "thin", wrap_in_notification: true }), {
    notification: { type: "subject_reproved", id: "d1" },
  });
  assert.deepEqual(body({ event_mapping: { subject_reproved: "customer_rejected" } }), {
    id: "d1",
    type: "customer_rejected",
    data: delivery.data,
  });
});

Deno.test("outbound requests never reach private addresses when private URLs are not allowed", async (t) => {
  await t.step("loopback, private, link-local, metadata and reserved addresses are refused", () => {
    for (
      const ip of [
        "127.0.0.1",
        "127.1.2.3",
        "10.0.0.1",
        "172.16.5.4",
        "192.168.1.1",
        "169.254.169.254",
        "100.64.0.1",
        "0.0.0.0",
        "224.0.0.1",
        "255.255.255.255",
        "::1",
        "[::1]",
        "::",
        "fe80::1",
        "fd00:ec2::254",
        "::ffff:127.0.0.1",
        "::ffff:7f00:1",
        "::ffff:a9fe:a9fe",
        "64:ff9b::a00:1",
        "::ffff:808:808",
      ]
    ) assert.equal(isPrivateAddress(ip), true, ip);
  });

  await t.step("public addresses pass", () => {
    for (const ip of ["8.8.8.8", "1.1.1.1", "172.32.0.1", "2606:4700:4700::1111", "64:ff9b::808:808"]) {
      assert.equal(isPrivateAddress(ip), false, ip);
    }
  });

  await t.step("literal IPs in URLs, in any notation the URL parser accepts, are refused", async () => {
    for (
      const url of [
        "https://127.0.0.1/hook",
        "https://10.0.0.1/hook",
        "https://169.254.169.254/latest/meta-data",
        "https://2130706433/",
        "https://0x7f.1/",
        "https://[::ffff:127.0.0.1]/",
        "https://localhost/",
        "https://metadata.google.internal/",
      ]
    ) {
      await assert.rejects(
        checkedAddresses(new URL(url), { resolve: systemResolver, allowPrivate: false }),
        /refused/,
        url,
      );
    }
  });

  await t.step("a POST to a private address is a failed attempt with status 0 and the reason", async () => {
    const rx = startReceiver();
    try {
      for (const url of [`${rx.url}/guarded`, "https://10.0.0.1/hook", "https://169.254.169.254/hook"]) {
        const res = await sendWebhook(url, EXAMPLE, {}, { timeoutMs: 1000, allowPrivateUrls: false });
        assert.equal(res.ok, false, url);
        assert.equal(res.httpStatus, 0);
        assert.match(res.responseBody, /^refused/);
      }
      const secure = await sendWebhook(rx.url.replace("http:", "https:"), EXAMPLE, {}, {
        timeoutMs: 1000,
        allowPrivateUrls: false,
      });
      assert.equal(
        secure.responseBody,
        "refused: private address (WEBHOOK_ALLOW_PRIVATE_URLS=true allows it, never in production)",
      );
      assert.equal(rx.arrivals.length, 0);
      // With the development flag the same receiver is reached.
      const allowed = await sendWebhook(`${rx.url}/guarded`, EXAMPLE, {}, { timeoutMs: 1000, allowPrivateUrls: true });
      assert.equal(allowed.ok, true);
      assert.equal(rx.at("/guarded").length, 1);
    } finally {
      await rx.close();
    }
  });

  await t.step("redirects are not followed: a 3xx is a failed attempt", async () => {
    const rx = startReceiver((a) =>
      a.path === "/moved" ? new Response(null, { status: 302, headers: { location: "/target" } }) : new Response("ok")
    );
    try {
      const res = await sendWebhook(`${rx.url}/moved`, EXAMPLE, {}, { timeoutMs: 1000, allowPrivateUrls: true });
      assert.equal(res.ok, false);
      assert.equal(res.httpStatus, 302);
      assert.equal(rx.at("/target").length, 0);
    } finally {
      await rx.close();
    }
  });

  await t.step("a slow receiver times out; a long answer is cut at 16 KiB", async () => {
    const rx = startReceiver(async (a) => {
      if (a.path === "/slow") await new Promise((r) => setTimeout(r, 500));
      return new Response("é".repeat(20_000));
    });
    try {
      const slow = await sendWebhook(`${rx.url}/slow`, EXAMPLE, {}, { timeoutMs: 100, allowPrivateUrls: true });
      assert.deepEqual([slow.ok, slow.httpStatus, slow.responseBody], [false, 0, "timeout after 100 ms"]);
      const long = await sendWebhook(`${rx.url}/long`, EXAMPLE, {}, { timeoutMs: 2000, allowPrivateUrls: true });
      assert.equal(long.ok, true);
      assert.equal(new TextEncoder().encode(long.responseBody).length, 16 * 1024);
    } finally {
      await rx.close();
    }
  });
});
