/**
 * Secrets at rest: the secret box (seal, open, key rotation, contexts), the development key file, and webhook
 * signing secrets stored sealed, sealed at start when stored plain, and moved to a new key.
 */
import assert from "node:assert/strict";
import { loadConfig } from "../../domain/infra/config.ts";
import { connect } from "../../domain/infra/db.ts";
import { localSecret } from "../../domain/infra/local_secrets.ts";
import { setLogLevel } from "../../domain/basics/log.ts";
import { migrationFiles } from "../../domain/infra/migrate.ts";
import { createSecretBox } from "../../domain/infra/secret_box.ts";
import { MAX_PREVIOUS_SECRETS } from "../../domain/webhooks/endpoints/credentials.ts";
import { emitEvent } from "../../domain/webhooks/outbox/events.ts";
import { parseSignatureHeader, verifySignature } from "../../domain/webhooks/endpoints/signature.ts";
import { dropDatabase, eventually, freshDatabase, newCompany, setup, TEST_JWT_SECRET } from "../support/helpers.ts";
import { httpCompany, runTask, startService } from "../support/service_process.ts";
import { hmac, startReceiver } from "../support/webhook_receiver.ts";
import { ENDPOINTS } from "../support/endpoints.ts";

const newKey = () => crypto.getRandomValues(new Uint8Array(32)).toHex();

Deno.test("sealed values open only with their key, for their context, unaltered", async (t) => {
  const current = crypto.getRandomValues(new Uint8Array(32));
  const previous = crypto.getRandomValues(new Uint8Array(32));
  const box = await createSecretBox(current, [previous]);
  const old = await createSecretBox(previous);

  await t.step("a value opens back to itself, and sealing twice gives two different values (fresh nonce)", async () => {
    const a = await box.seal("s3cret", "row:1");
    const b = await box.seal("s3cret", "row:1");
    assert.notEqual(a, b);
    assert.ok(a.startsWith(box.currentPrefix));
    assert.doesNotMatch(a, /s3cret/);
    assert.equal(await box.open(a, "row:1"), "s3cret");
    assert.equal(await box.open(b, "row:1"), "s3cret");
  });

  await t.step("what the previous key sealed still opens; what an unknown key sealed does not", async () => {
    assert.equal(await box.open(await old.seal("before", "row:1"), "row:1"), "before");
    const stranger = await createSecretBox(crypto.getRandomValues(new Uint8Array(32)));
    await assert.rejects(box.open(await stranger.seal("x", "row:1"), "row:1"), /SECRET_ENCRYPTION_KEY/);
  });

  await t.step("another context, an altered value or plain text does not open", async () => {
    const sealed = await box.seal("s3cret", "row:1");
    await assert.rejects(box.open(sealed, "row:2"), /does not open/);
    const last = sealed.at(-2) === "A" ? "B" : "A";
    await assert.rejects(box.open(`${sealed.slice(0, -2)}${last}${sealed.at(-1)}`, "row:1"), /does not open/);
    await assert.rejects(box.open("a".repeat(64), "row:1"), /not a sealed value/);
  });

  await t.step("bytes are sealed the same way: the key's prefix, then nonce, ciphertext and tag", async () => {
    const plain = new TextEncoder().encode('{"data":{"secret":"s3cret"}}');
    const sealed = await box.sealBytes(plain, "row:1");
    assert.equal(new TextDecoder().decode(sealed.subarray(0, box.currentPrefix.length)), box.currentPrefix);
    assert.equal(sealed.length, plain.length + box.currentPrefix.length + 12 + 16);
    assert.ok(!new TextDecoder().decode(sealed).includes("s3cret"));
    assert.deepEqual(await box.openBytes(sealed, "row:1"), plain);
    assert.deepEqual(await box.openBytes(await box.sealBytes(new Uint8Array(), "row:1"), "row:1"), new Uint8Array());
    assert.deepEqual(await box.openBytes(await old.sealBytes(plain, "row:1"), "row:1"), plain);
    await assert.rejects(box.openBytes(sealed, "row:2"), /does not open/);
    const altered = sealed.slice();
    altered[altered.length - 1] ^= 1;
    await assert.rejects(box.openBytes(altered, "row:1"), /does not open/);
    await assert.rejects(box.openBytes(plain, "row:1"), /not sealed/);
    const stranger = await createSecretBox(crypto.getRandomValues(new Uint8Array(32)));
    await assert.rejects(box.openBytes(await stranger.sealBytes(plain, "row:1"), "row:1"), /SECRET_ENCRYPTION_KEY/);
  });

  await t.step("SECRET_ENCRYPTION_KEY is 32 bytes, as hex or base64; anything else stops the start", () => {
    const bytes = crypto.getRandomValues(new Uint8Array(32));
    for (
      const text of [
        bytes.toHex(),
        bytes.toHex().toUpperCase(),
        bytes.toBase64(),
        bytes.toBase64({ alphabet: "base64url", omitPadding: true }),
      ]
    ) {
      assert.deepEqual(
        loadConfig({ JWT_SECRET: TEST_JWT_SECRET, SECRET_ENCRYPTION_KEY: text }).secretEncryptionKey,
        bytes,
        text,
      );
    }
    for (const bad of ["x", bytes.subarray(1).toHex(), bytes.subarray(1).toBase64(), `${bytes.toHex()}00`]) {
      assert.throws(
        () => loadConfig({ JWT_SECRET: TEST_JWT_SECRET, SECRET_ENCRYPTION_KEY_PREVIOUS: bad }),
        /SECRET_ENCRYPTION_KEY_PREVIOUS: must/,
      );
    }
  });
});

Deno.test("the development key is made once, readable by its owner only", async () => {
  const root = await Deno.makeTempDir();
  try {
    const dir = `${root}/.data/secrets`;
    const values = await Promise.all(Array.from({ length: 8 }, () => localSecret("key", dir)));
    assert.match(values[0], /^[0-9a-f]{64}$/);
    assert.equal(new Set(values).size, 1, "processes starting together agree on one value");
    assert.equal(await localSecret("key", dir), values[0], "and a later start reads it back");
    assert.notEqual(await localSecret("other", dir), values[0]);
    assert.equal((await Deno.stat(dir)).mode! & 0o777, 0o700);
    assert.equal((await Deno.stat(`${dir}/key`)).mode! & 0o777, 0o600);
    assert.notEqual((await Deno.stat(`${root}/.data`)).mode! & 0o777, 0o700, "the parent stays reachable");
    assert.deepEqual([...Deno.readDirSync(dir)].map((e) => e.name).sort(), ["key", "other"]);
    await Deno.writeTextFile(`${dir}/broken`, "not a secret");
    await assert.rejects(localSecret("broken", dir), /does not hold a generated secret/);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("webhook signing secrets at rest", async (t) => {
  const ctx = await setup("webhook_secrets", {
    worker: true,
    env: { SECRET_ENCRYPTION_KEY: newKey(), WEBHOOK_RETRY_SCHEDULE: "0.05" },
  });
  const rx = startReceiver();
  const stored = async (id: string) =>
    (await ctx.sql<{ row: string }[]>`select row_to_json(e)::text as row from webhook_endpoints e where id = ${id}`)[0]
      .row;

  await t.step("the database holds no secret in plain text; the API still shows it", async () => {
    const company = await newCompany(ctx);
    const created = (await company.post(ENDPOINTS, { url: `${rx.url}/at-rest` })).body.data;
    const rotated = (await company.post(`${ENDPOINTS}/${created.id}/rotate_secret`)).body.data;
    const row = await stored(created.id);
    for (const secret of [created.secret, rotated.secret]) assert.ok(!row.includes(secret), "a secret in the row");
    const [{ sealed_secret, sealed_previous_secrets }] = await ctx.sql`
      select sealed_secret, sealed_previous_secrets from webhook_endpoints where id = ${created.id}`;
    assert.match(sealed_secret, /^enc:v1:[0-9a-f]{8}:/);
    assert.match(sealed_previous_secrets[0].secret, /^enc:v1:[0-9a-f]{8}:/);

    const shown = (await company.get(`${ENDPOINTS}/${created.id}`)).body.data;
    assert.deepEqual([shown.secret, shown.previous_secret], [rotated.secret, created.secret]);
    const listed = (await company.get(ENDPOINTS)).body.data;
    assert.equal(listed[0].secret, rotated.secret);
  });

  await t.step("answers that carry secrets are never cached", async () => {
    const company = await newCompany(ctx);
    const created = await company.post(ENDPOINTS, { url: `${rx.url}/cache` });
    const id = created.body.data.id;
    for (
      const res of [
        created,
        await company.get(ENDPOINTS),
        await company.get(`${ENDPOINTS}/${id}`),
        await company.put(`${ENDPOINTS}/${id}`, { max_concurrency: 2 }),
        await company.post(`${ENDPOINTS}/${id}/rotate_secret`),
      ]
    ) {
      assert.ok(res.status < 300, String(res.status));
      assert.equal(res.headers.get("cache-control"), "no-store");
    }
  });

  await t.step("two rotations within a minute: a receiver still on the original secret verifies", async () => {
    const company = await newCompany(ctx);
    const original = (await company.post(ENDPOINTS, { url: `${rx.url}/rotations` })).body.data;
    const second = (await company.post(`${ENDPOINTS}/${original.id}/rotate_secret`)).body.data;
    const third = (await company.post(`${ENDPOINTS}/${original.id}/rotate_secret`)).body.data;
    assert.equal(third.previous_secret, second.secret);

    const shown = (await company.get(`${ENDPOINTS}/${original.id}`)).body.data;
    assert.equal(shown.secret, third.secret);
    assert.equal(shown.previous_secret, second.secret);
    assert.equal(shown.previous_secret_expires_at, shown.previous_secrets[0].expires_at);
    assert.deepEqual(shown.previous_secrets.map((p: { secret: string }) => p.secret), [second.secret, original.secret]);
    for (const p of shown.previous_secrets) {
      const left = new Date(p.expires_at).getTime() - Date.now();
      assert.ok(Math.abs(left - 24 * 3600 * 1000) < 60_000, `expires in ${left} ms`);
    }
    assert.ok(shown.previous_secrets[0].expires_at > shown.previous_secrets[1].expires_at, "each its own expiry");

    await ctx.sql.begin((tx) => emitEvent(tx, company.id, "identified", { transaction_id: crypto.randomUUID() }));
    const arrival = await eventually("the delivery", () => rx.at("/rotations")[0]);
    const parts = parseSignatureHeader(arrival.signature!)!;
    assert.equal(parts.v1, hmac(third.secret, parts.t, arrival.raw));
    assert.deepEqual(parts.v0s, [
      hmac(second.secret, parts.t, arrival.raw),
      hmac(original.secret, parts.t, arrival.raw),
    ]);
    for (const secret of [original.secret, second.secret, third.secret]) {
      assert.equal(await verifySignature(arrival.raw, arrival.signature, secret), true);
    }
  });

  await t.step("a previous secret past its own expiry stops signing and is no longer shown", async () => {
    const company = await newCompany(ctx);
    const original = (await company.post(ENDPOINTS, { url: `${rx.url}/expiry` })).body.data;
    const second = (await company.post(`${ENDPOINTS}/${original.id}/rotate_secret`)).body.data;
    const third = (await company.post(`${ENDPOINTS}/${original.id}/rotate_secret`)).body.data;
    // The original one was rotated away first: make it the first to expire.
    await ctx.sql`
      update webhook_endpoints
      set sealed_previous_secrets = jsonb_set(sealed_previous_secrets, '{1,expires_at}', to_jsonb(now() - interval '1 s'))
      where company_id = ${company.id} and id = ${original.id}`;
    const shown = (await company.get(`${ENDPOINTS}/${original.id}`)).body.data;
    assert.deepEqual(shown.previous_secrets.map((p: { secret: string }) => p.secret), [second.secret]);

    await ctx.sql.begin((tx) => emitEvent(tx, company.id, "identified", { transaction_id: crypto.randomUUID() }));
    const arrival = await eventually("the delivery", () => rx.at("/expiry")[0]);
    assert.equal(await verifySignature(arrival.raw, arrival.signature, original.secret), false);
    assert.equal(await verifySignature(arrival.raw, arrival.signature, second.secret), true);
    assert.equal(await verifySignature(arrival.raw, arrival.signature, third.secret), true);
    assert.equal(parseSignatureHeader(arrival.signature!)!.v0s.length, 1);
  });

  await t.step(`rotating again and again keeps the ${MAX_PREVIOUS_SECRETS} most recent previous secrets`, async () => {
    const company = await newCompany(ctx);
    const original = (await company.post(ENDPOINTS, { url: `${rx.url}/many` })).body.data;
    const secrets = [original.secret];
    for (let i = 0; i <= MAX_PREVIOUS_SECRETS; i++) {
      secrets.push((await company.post(`${ENDPOINTS}/${original.id}/rotate_secret`)).body.data.secret);
    }
    const shown = (await company.get(`${ENDPOINTS}/${original.id}`)).body.data;
    assert.equal(shown.secret, secrets.at(-1));
    assert.deepEqual(
      shown.previous_secrets.map((p: { secret: string }) => p.secret),
      secrets.slice(1, -1).reverse(),
    );
  });

  await rx.close();
  await ctx.close();
});

Deno.test("secrets stored before sealing are sealed at start; the encryption key can be rotated", async (t) => {
  setLogLevel("silent");
  const url = await freshDatabase("webhook_secrets_upgrade");
  const sql = connect(url, { max: 2 });
  const company = await httpCompany();
  const endpointId = crypto.randomUUID();
  const expiredId = crypto.randomUUID();
  const plain = { secret: "c".repeat(64), previous: "d".repeat(64), expired: "e".repeat(64), other: "f".repeat(64) };
  const firstKey = newKey();
  const secondKey = newKey();
  const stored = async () =>
    (await sql<{ rows: string }[]>`select json_agg(e)::text as rows from webhook_endpoints e`)[0].rows;
  const show = async (base: string, id: string) => {
    const res = await company.call(base, "GET", `${ENDPOINTS}/${id}`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.body.data;
  };

  try {
    await t.step("a database as the previous version left it: secrets in plain text", async () => {
      await sql`create table schema_migrations (version text primary key, applied_at timestamptz not null default now())`;
      for (const file of (await migrationFiles()).filter((f) => f.version < "0009")) {
        await sql.begin(async (tx) => {
          await tx.unsafe(file.text);
          await tx`insert into schema_migrations (version) values (${file.version})`;
        });
      }
      await sql`insert into companies (id) values (${company.id})`;
      await sql`
        insert into webhook_endpoints (id, company_id, url, secret, previous_secret, previous_secret_expires_at)
        values
          (${endpointId}, ${company.id}, 'https://example.com/a', ${plain.secret}, ${plain.previous},
           now() + interval '3 hours'),
          (${expiredId}, ${company.id}, 'https://example.com/b', ${plain.other}, ${plain.expired},
           now() - interval '1 hour')`;
    });

    await t.step("the first start seals them; the API shows the same secrets", async () => {
      const service = await startService(url, { SECRET_ENCRYPTION_KEY: firstKey });
      try {
        const rows = await stored();
        for (const secret of Object.values(plain)) assert.ok(!rows.includes(secret), "a plain secret is left");
        const shown = await show(service.base, endpointId);
        assert.deepEqual([shown.secret, shown.previous_secret], [plain.secret, plain.previous]);
        const left = new Date(shown.previous_secret_expires_at).getTime() - Date.now();
        assert.ok(Math.abs(left - 3 * 3600 * 1000) < 60_000, "the previous secret keeps its expiry");
        const other = await show(service.base, expiredId);
        assert.deepEqual([other.secret, other.previous_secrets], [plain.other, []]);
        // a secret custom header, sealed with this key, for the re-seal below (docs/webhooks.md, "Custom headers")
        const withHeader = await company.call(service.base, "PUT", `${ENDPOINTS}/${endpointId}`, {
          secret_headers: { "X-Api-Key": "k_live_0123456789abcdef" },
        });
        assert.equal(withHeader.status, 200, JSON.stringify(withHeader.body));
      } finally {
        await service.stop();
      }
    });

    await t.step(
      "with a new key and the old one as previous, secrets still open; re-sealing moves them all",
      async () => {
        const keys = { SECRET_ENCRYPTION_KEY: secondKey, SECRET_ENCRYPTION_KEY_PREVIOUS: firstKey };
        const service = await startService(url, keys);
        try {
          assert.equal((await show(service.base, endpointId)).secret, plain.secret);
        } finally {
          await service.stop();
        }
        const command = await runTask(url, ["reseal-secrets"], { LOG_LEVEL: "silent", JWT_SECRET: undefined, ...keys });
        assert.equal(command.code, 0, command.stderr);
        assert.match(command.stdout, /^2 endpoint\(s\) re-sealed/);
        assert.match(command.stdout, /\n1 endpoint\(s\) with secret custom headers re-sealed\n/);
        const box = await createSecretBox(Uint8Array.fromHex(secondKey));
        const [{ sealed }] = await sql<{ sealed: string[] }[]>`
        select array_agg(sealed_secret) || array_agg(p->>'secret') filter (where p is not null) as sealed
        from webhook_endpoints left join lateral jsonb_array_elements(sealed_previous_secrets) p on true`;
        assert.equal(sealed.length, 3);
        assert.ok(sealed.every((s) => s.startsWith(box.currentPrefix)), "everything sealed with the new key");
      },
    );

    await t.step("after that the old key is no longer needed", async () => {
      const service = await startService(url, { SECRET_ENCRYPTION_KEY: secondKey });
      try {
        const shown = await show(service.base, endpointId);
        assert.deepEqual([shown.secret, shown.previous_secret], [plain.secret, plain.previous]);
        assert.deepEqual(shown.secret_headers, { "X-Api-Key": "****cdef" }, "the new key alone opens it");
      } finally {
        await service.stop();
      }
    });
  } finally {
    await sql.end();
    await dropDatabase(url);
  }
});
