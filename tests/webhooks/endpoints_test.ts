/**
 * Webhook endpoint management: create, show, update, list, rotate_secret and disable, the settings' checks and
 * defaults, public https URLs outside development, and tenancy.
 */
import assert from "node:assert/strict";
import { EVENT_TYPES } from "../../domain/webhooks/outbox/events.ts";
import { newCompany, setup } from "../support/helpers.ts";

const BASE = "/api/v2/notifications/endpoints";
const ENDPOINT_KEYS = [
  "id",
  "company_id",
  "url",
  "transport",
  "destination",
  "broker_credentials",
  "status",
  "disabled_reason",
  "disabled_at",
  "enabled_events",
  "delivery_mode",
  "event_payload_type",
  "inject_secret_in_body",
  "wrap_in_notification",
  "max_concurrency",
  "event_mapping",
  "filter",
  "rate_limit",
  "batch",
  "secret",
  "previous_secret",
  "previous_secret_expires_at",
  "previous_secrets",
  "signature_scheme",
  "public_key",
  "previous_public_keys",
  "client_certificate",
  "inserted_at",
  "updated_at",
  // custom headers (docs/webhooks.md, "Custom headers")
  "headers",
  "secret_headers",
  "oauth2",
  "payload_version",
].sort();
const ISO_Z = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const HEX64 = /^[0-9a-f]{64}$/;

Deno.test("webhook endpoint management", async (t) => {
  const ctx = await setup("webhook_endpoints");
  const company = await newCompany(ctx);
  const other = await newCompany(ctx);

  await t.step("creating with only a url gives the documented defaults and a secret", async () => {
    const res = await company.post(BASE, { url: "https://example.com/hooks" });
    assert.equal(res.status, 201);
    const e = res.body.data;
    assert.deepEqual(Object.keys(e).sort(), ENDPOINT_KEYS);
    assert.equal(e.company_id, company.id);
    assert.deepEqual(
      {
        url: e.url,
        transport: e.transport,
        destination: e.destination,
        broker_credentials: e.broker_credentials,
        status: e.status,
        enabled_events: e.enabled_events,
        delivery_mode: e.delivery_mode,
        event_payload_type: e.event_payload_type,
        inject_secret_in_body: e.inject_secret_in_body,
        wrap_in_notification: e.wrap_in_notification,
        max_concurrency: e.max_concurrency,
        event_mapping: e.event_mapping,
        filter: e.filter,
        rate_limit: e.rate_limit,
        batch: e.batch,
        previous_secret: e.previous_secret,
        previous_secret_expires_at: e.previous_secret_expires_at,
        previous_secrets: e.previous_secrets,
        signature_scheme: e.signature_scheme,
        public_key: e.public_key,
        previous_public_keys: e.previous_public_keys,
        oauth2: e.oauth2,
      },
      {
        url: "https://example.com/hooks",
        transport: "http",
        destination: null,
        broker_credentials: null,
        status: "active",
        enabled_events: ["*"],
        delivery_mode: "parallel",
        event_payload_type: "snapshot",
        inject_secret_in_body: false,
        wrap_in_notification: false,
        max_concurrency: 10,
        event_mapping: null,
        filter: null,
        rate_limit: null,
        batch: null,
        previous_secret: null,
        previous_secret_expires_at: null,
        previous_secrets: [],
        signature_scheme: "hmac-sha256",
        public_key: null,
        previous_public_keys: [],
        oauth2: null,
      },
    );
    assert.match(e.secret, HEX64);
    assert.match(e.inserted_at, ISO_Z);
    assert.match(e.updated_at, ISO_Z);
  });

  await t.step("every setting can be given on create, and show returns the same object", async () => {
    const settings = {
      url: "https://example.com/legacy",
      enabled_events: ["identified", "wire_created"],
      delivery_mode: "sequential",
      event_payload_type: "thin",
      inject_secret_in_body: true,
      wrap_in_notification: true,
      max_concurrency: 3,
      event_mapping: { identified: "payment_identified" },
    };
    const created = await company.post(BASE, settings);
    assert.equal(created.status, 201);
    for (const [key, value] of Object.entries(settings)) assert.deepEqual(created.body.data[key], value, key);
    const shown = await company.get(`${BASE}/${created.body.data.id}`);
    assert.equal(shown.status, 200);
    assert.deepEqual(shown.body.data, created.body.data);
  });

  await t.step("two endpoints never share a secret", async () => {
    const a = await company.post(BASE, { url: "https://example.com/a" });
    const b = await company.post(BASE, { url: "https://example.com/b" });
    assert.notEqual(a.body.data.secret, b.body.data.secret);
  });

  await t.step("a missing url is 400; bad values are 422 naming the field", async () => {
    const missing = await company.post(BASE, { delivery_mode: "parallel" });
    assert.equal(missing.status, 400);
    assert.deepEqual(missing.body, { errors: { url: ["can't be blank"] } });

    const cases: [Record<string, unknown>, string][] = [
      [{ url: "not a url" }, "url"],
      [{ url: "ftp://example.com/x" }, "url"],
      [{ url: "https://example.com", enabled_events: ["identified", "made_up"] }, "enabled_events"],
      [{ url: "https://example.com", enabled_events: [] }, "enabled_events"],
      [{ url: "https://example.com", enabled_events: "identified" }, "enabled_events"],
      [{ url: "https://example.com", delivery_mode: "fifo" }, "delivery_mode"],
      [{ url: "https://example.com", event_payload_type: "fat" }, "event_payload_type"],
      [{ url: "https://example.com", inject_secret_in_body: "yes" }, "inject_secret_in_body"],
      [{ url: "https://example.com", wrap_in_notification: 1 }, "wrap_in_notification"],
      [{ url: "https://example.com", max_concurrency: 0 }, "max_concurrency"],
      [{ url: "https://example.com", max_concurrency: 101 }, "max_concurrency"],
      [{ url: "https://example.com", max_concurrency: 2.5 }, "max_concurrency"],
      [{ url: "https://example.com", event_mapping: { made_up: "x" } }, "event_mapping"],
      [{ url: "https://example.com", event_mapping: ["identified"] }, "event_mapping"],
    ];
    for (const [body, field] of cases) {
      const res = await company.post(BASE, body);
      assert.equal(res.status, 422, JSON.stringify(body));
      assert.deepEqual(Object.keys(res.body.errors), [field], JSON.stringify(body));
    }
    const enumError = await company.post(BASE, { url: "https://example.com", delivery_mode: "fifo" });
    assert.deepEqual(enumError.body.errors.delivery_mode, ["must be one of: parallel, sequential"]);
    const tooMany = await company.post(BASE, { url: "https://example.com", max_concurrency: 101 });
    assert.deepEqual(tooMany.body.errors.max_concurrency, ["must be less than or equal to 100"]);
  });

  await t.step("a bad url, unknown event types and a zero max_concurrency are listed together", async () => {
    const expected = {
      url: [
        "has invalid format: expected a URL starting http://, https://, amqp://, amqps://, nats://, tls://, redis://, " +
        "rediss://, mqtt://, mqtts://, e.g. https://example.com/hooks",
      ],
      enabled_events: [`must be one of: *, ${EVENT_TYPES.join(", ")}`],
      max_concurrency: ["must be greater than or equal to 1"],
    };
    const res = await company.post(BASE, { url: "ftp://x", enabled_events: ["nope"], max_concurrency: 0 });
    assert.equal(res.status, 422, JSON.stringify(res.body));
    assert.deepEqual(res.body, { errors: expected });

    const created = (await company.post(BASE, { url: "https://example.com/all-errors" })).body.data;
    const update = await company.put(`${BASE}/${created.id}`, {
      url: "ftp://x",
      enabled_events: ["nope"],
      max_concurrency: 0,
    });
    assert.equal(update.status, 422, JSON.stringify(update.body));
    assert.deepEqual(update.body, { errors: expected });
    const unchanged = await company.get(`${BASE}/${created.id}`);
    assert.equal(unchanged.body.data.url, "https://example.com/all-errors");
  });

  await t.step("every known event type and * are accepted", async () => {
    const res = await company.post(BASE, { url: "https://example.com/all", enabled_events: [...EVENT_TYPES, "*"] });
    assert.equal(res.status, 201);
  });

  await t.step("update changes only the fields given, url included", async () => {
    const created = (await company.post(BASE, { url: "https://example.com/u", max_concurrency: 5 })).body.data;
    const res = await company.put(`${BASE}/${created.id}`, {
      url: "https://example.com/v",
      enabled_events: ["payment_approved"],
      event_mapping: { payment_approved: "approved" },
    });
    assert.equal(res.status, 200);
    const e = res.body.data;
    assert.equal(e.url, "https://example.com/v");
    assert.deepEqual(e.enabled_events, ["payment_approved"]);
    assert.deepEqual(e.event_mapping, { payment_approved: "approved" });
    assert.equal(e.max_concurrency, 5);
    assert.equal(e.secret, created.secret);
    assert.equal(e.inserted_at, created.inserted_at);
    assert.ok(e.updated_at >= created.updated_at);

    const cleared = await company.put(`${BASE}/${created.id}`, { event_mapping: null });
    assert.equal(cleared.body.data.event_mapping, null);
    assert.equal(cleared.body.data.url, "https://example.com/v");

    const bad = await company.put(`${BASE}/${created.id}`, { max_concurrency: 0, delivery_mode: "x" });
    assert.equal(bad.status, 422);
    assert.deepEqual(Object.keys(bad.body.errors).sort(), ["delivery_mode", "max_concurrency"]);
  });

  await t.step("rotate_secret gives a new secret; the old one stays valid for 24 hours", async () => {
    const created = (await company.post(BASE, { url: "https://example.com/r" })).body.data;
    const before = Date.now();
    const res = await company.post(`${BASE}/${created.id}/rotate_secret`);
    assert.equal(res.status, 200);
    const r = res.body.data;
    assert.deepEqual(Object.keys(r).sort(), [
      "id",
      "previous_public_keys",
      "previous_secret",
      "previous_secret_expires_at",
      "public_key",
      "secret",
      "signature_scheme",
    ]);
    assert.deepEqual([r.signature_scheme, r.public_key, r.previous_public_keys], ["hmac-sha256", null, []]);
    assert.equal(r.id, created.id);
    assert.match(r.secret, HEX64);
    assert.notEqual(r.secret, created.secret);
    assert.equal(r.previous_secret, created.secret);
    assert.match(r.previous_secret_expires_at, ISO_Z);
    const ttl = new Date(r.previous_secret_expires_at).getTime() - before;
    assert.ok(Math.abs(ttl - 24 * 3600 * 1000) < 60_000, `expires in ${ttl} ms`);

    const shown = (await company.get(`${BASE}/${created.id}`)).body.data;
    assert.equal(shown.secret, r.secret);
    assert.equal(shown.previous_secret, created.secret);
    assert.equal(shown.previous_secret_expires_at, r.previous_secret_expires_at);
  });

  await t.step("the list holds the company's endpoints only, oldest first", async () => {
    const mine = await company.get(BASE);
    assert.equal(mine.status, 200);
    const ids = mine.body.data.map((e: { id: string }) => e.id);
    assert.ok(ids.length >= 5);
    assert.deepEqual(ids, [...ids].sort());
    assert.ok(mine.body.data.every((e: { company_id: string }) => e.company_id === company.id));
    const theirs = await other.get(BASE);
    assert.deepEqual(theirs.body, { data: [] });
  });

  await t.step("another company's endpoint answers 404 to every call", async () => {
    const id = (await company.post(BASE, { url: "https://example.com/private" })).body.data.id;
    const notFound = { errors: { detail: "Not Found" } };
    for (
      const res of [
        await other.get(`${BASE}/${id}`),
        await other.put(`${BASE}/${id}`, { url: "https://evil.example.com" }),
        await other.delete(`${BASE}/${id}`),
        await other.post(`${BASE}/${id}/rotate_secret`),
      ]
    ) {
      assert.equal(res.status, 404);
      assert.deepEqual(res.body, notFound);
    }
    const still = (await company.get(`${BASE}/${id}`)).body.data;
    assert.equal(still.url, "https://example.com/private");
    assert.equal(still.status, "active");
    const unknown = await company.get(`${BASE}/${crypto.randomUUID()}`);
    assert.equal(unknown.status, 404);
    const malformed = await company.get(`${BASE}/not-a-uuid`);
    assert.equal(malformed.status, 400);
    assert.deepEqual(malformed.body, { errors: { id: ["is invalid"] } });
  });

  await t.step("DELETE disables one endpoint; it stays visible as disabled", async () => {
    const id = (await company.post(BASE, { url: "https://example.com/d" })).body.data.id;
    const res = await company.delete(`${BASE}/${id}`);
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { data: { id, status: "disabled" } });
    assert.equal((await company.get(`${BASE}/${id}`)).body.data.status, "disabled");
  });

  await t.step("DELETE on the collection disables every endpoint of the company only", async () => {
    const theirs = (await other.post(BASE, { url: "https://example.com/theirs" })).body.data.id;
    const res = await company.delete(BASE);
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { data: "ok" });
    const mine = (await company.get(BASE)).body.data;
    assert.ok(mine.every((e: { status: string }) => e.status === "disabled"));
    assert.equal((await other.get(`${BASE}/${theirs}`)).body.data.status, "active");
  });

  await ctx.close();
});

Deno.test("without WEBHOOK_ALLOW_PRIVATE_URLS, endpoints must be public https URLs", async (t) => {
  const ctx = await setup("webhook_endpoints_strict", { env: { WEBHOOK_ALLOW_PRIVATE_URLS: "false" } });
  const company = await newCompany(ctx);

  await t.step("http, loopback, private, link-local and metadata addresses are refused with 422", async () => {
    for (
      const url of [
        "http://example.com/hook",
        "https://127.0.0.1/hook",
        "https://10.0.0.1/hook",
        "https://192.168.0.10/hook",
        "https://[::1]/hook",
        "https://localhost:8443/hook",
      ]
    ) {
      const res = await company.post(BASE, { url });
      assert.equal(res.status, 422, url);
      assert.deepEqual(Object.keys(res.body.errors), ["url"], url);
      // the refusal names the setting that changes it
      assert.match(res.body.errors.url[0], /WEBHOOK_ALLOW_PRIVATE_URLS=true, never in production/, url);
    }
    // no setting allows a link-local or cloud metadata address, and the refusal says so
    for (const url of ["https://169.254.169.254/latest/meta-data", "https://[fd00:ec2::254]/", "https://[fe80::1]/"]) {
      const res = await company.post(BASE, { url });
      assert.equal(res.status, 422, url);
      assert.deepEqual(res.body.errors, {
        url: ["must not point to a link-local or cloud metadata address (no setting allows it)"],
      });
    }
  });

  await t.step("a public https URL is accepted, and cannot be updated to a private one", async () => {
    const res = await company.post(BASE, { url: "https://hooks.example.com/in" });
    assert.equal(res.status, 201);
    const update = await company.put(`${BASE}/${res.body.data.id}`, { url: "https://10.0.0.1/in" });
    assert.equal(update.status, 422);
    assert.ok(update.body.errors.url);
  });

  await t.step("a private URL is listed with the shape errors of the same body", async () => {
    const res = await company.post(BASE, { url: "http://hooks.example.com/in", delivery_mode: "fifo" });
    assert.equal(res.status, 422, JSON.stringify(res.body));
    assert.deepEqual(res.body, {
      errors: {
        url: ["must be an https URL (http:// needs WEBHOOK_ALLOW_PRIVATE_URLS=true, never in production)"],
        delivery_mode: ["must be one of: parallel, sequential"],
      },
    });
  });

  await ctx.close();
});

Deno.test("one active endpoint per URL and company", async (t) => {
  const ctx = await setup("webhook_endpoint_urls");
  const company = await newCompany(ctx);
  const url = "https://example.com/once";
  const first = (await company.post(BASE, { url })).body.data.id;

  await t.step("a second registration of the URL answers 409 naming the endpoint that has it", async () => {
    const res = await company.post(BASE, { url, enabled_events: ["identified"] });
    assert.equal(res.status, 409);
    assert.deepEqual(res.body, {
      errors: { url: [`is already the URL of active endpoint ${first}: update that endpoint, or disable it first`] },
    });
    assert.equal((await company.get(BASE)).body.data.length, 1);
  });

  await t.step(
    "moving another endpoint to the URL is refused the same way; the endpoint itself may keep it",
    async () => {
      const second = (await company.post(BASE, { url: "https://example.com/twice" })).body.data.id;
      const moved = await company.put(`${BASE}/${second}`, { url });
      assert.equal(moved.status, 409);
      assert.match(moved.body.errors.url[0], new RegExp(first));
      assert.equal((await company.put(`${BASE}/${first}`, { url, enabled_events: ["identified"] })).status, 200);
      assert.equal((await company.delete(`${BASE}/${second}`)).status, 200);
    },
  );

  await t.step("once the endpoint is disabled the URL is free, and enabling the old one then clashes", async () => {
    assert.equal((await company.delete(`${BASE}/${first}`)).status, 200);
    const again = await company.post(BASE, { url });
    assert.equal(again.status, 201);
    const enable = await company.post(`${BASE}/${first}/enable`);
    assert.equal(enable.status, 409);
    assert.match(enable.body.errors.url[0], new RegExp(again.body.data.id));
    assert.equal((await company.get(`${BASE}/${first}`)).body.data.status, "disabled");
  });

  await t.step("another company may register the same URL", async () => {
    const other = await newCompany(ctx);
    assert.equal((await other.post(BASE, { url })).status, 201);
  });

  await ctx.close();
});

Deno.test("in development localhost, 127.0.0.1 and [::1] are one receiver: one endpoint for all three", async (t) => {
  // the development default: loopback receivers allowed (README, "Loopback receivers")
  const ctx = await setup("webhook_endpoint_loopback", { env: { APP_ENV: "development" } });
  const company = await newCompany(ctx);
  const first = (await company.post(BASE, { url: "http://127.0.0.1:4001/hooks" })).body.data.id;
  const refusal = (id: string, as: string) => ({
    errors: {
      url: [
        `is already the URL of active endpoint ${id} (as ${as}: localhost, 127.0.0.1 and [::1] are one receiver): ` +
        "update that endpoint, or disable it first",
      ],
    },
  });

  try {
    await t.step("the same receiver under another name answers 409 naming the endpoint and its URL", async () => {
      for (const url of ["http://localhost:4001/hooks", "http://[::1]:4001/hooks", "http://LOCALHOST:4001/hooks"]) {
        const res = await company.post(BASE, { url });
        assert.equal(res.status, 409, url);
        assert.deepEqual(res.body, refusal(first, "http://127.0.0.1:4001/hooks"));
      }
      assert.equal((await company.get(BASE)).body.data.length, 1);
    });

    await t.step("another port, path, query or scheme is another receiver", async () => {
      for (
        const url of [
          "http://localhost:4002/hooks",
          "http://localhost:4001/other",
          "http://localhost:4001/hooks?tenant=2",
          "https://localhost:4001/hooks",
        ]
      ) {
        assert.equal((await company.post(BASE, { url })).status, 201, url);
      }
    });

    await t.step("moving an endpoint to an alias, and enabling one at an alias, are refused the same way", async () => {
      const other = (await company.post(BASE, { url: "http://127.0.0.1:4003/hooks" })).body.data.id;
      const moved = await company.put(`${BASE}/${other}`, { url: "http://localhost:4001/hooks" });
      assert.equal(moved.status, 409);
      assert.deepEqual(moved.body, refusal(first, "http://127.0.0.1:4001/hooks"));
      // the endpoint keeps its own URL under another of its names
      assert.equal((await company.put(`${BASE}/${other}`, { url: "http://[::1]:4003/hooks" })).status, 200);

      assert.equal((await company.delete(`${BASE}/${first}`)).status, 200);
      const again = (await company.post(BASE, { url: "http://localhost:4001/hooks" })).body.data.id;
      const enable = await company.post(`${BASE}/${first}/enable`);
      assert.equal(enable.status, 409);
      assert.deepEqual(enable.body, refusal(again, "http://localhost:4001/hooks"));
    });

    await t.step("another company may use the same receiver", async () => {
      const otherCompany = await newCompany(ctx);
      assert.equal((await otherCompany.post(BASE, { url: "http://localhost:4001/hooks" })).status, 201);
    });
  } finally {
    await ctx.close();
  }
});
