/**
 * The Idempotency-Key stories (routes/policy/idempotency.ts over domain/requests/idempotency.ts): a retried POST
 * answers the first response and runs once, duplicates in flight never both run, keys last 24 hours, answers sealed.
 */
import assert from "node:assert/strict";
import {
  type Company,
  dropDatabase,
  eventually,
  migratedDatabase,
  newCompany,
  type Reply,
  setup,
  type TestContext,
} from "../support/helpers.ts";
import { pruneIdempotencyKeys, requestFingerprint, sealStoredAnswers } from "../../domain/requests/idempotency.ts";
import { connect, type Sql } from "../../domain/infra/db.ts";
import { setLogLevel } from "../../domain/basics/log.ts";
import { migrate } from "../../domain/infra/migrate.ts";
import { createSecretBox } from "../../domain/infra/secret_box.ts";
import { UNREADABLE_DETAIL } from "../../routes/policy/idempotency.ts";
import { httpCompany, runTask, startService } from "../support/service_process.ts";
import { ENDPOINTS } from "../support/endpoints.ts";

const PEOPLE = "/api/v1/subject/people";
const PAYINS = "/api/sandbox/payins";

const personBody = (documentNumber = "52998224725") => ({
  person: { document_number: documentNumber, document_type: "cpf", social_name: "Ana Souza", fiscal_country: "BRA" },
});

const withKey = (company: Company, key: string, path: string, body: unknown): Promise<Reply> =>
  company.call("POST", path, body, { "idempotency-key": key });

async function registerPerson(company: Company): Promise<string> {
  const res = await company.post(PEOPLE, personBody());
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body.data.id;
}

async function countRows(ctx: TestContext, table: "transactions" | "events", companyId: string): Promise<number> {
  const [row] = await ctx.sql`select count(*)::int as n from ${ctx.sql(table)} where company_id = ${companyId}`;
  return row.n;
}

Deno.test("Idempotency-Key: a retried POST answers the first response and runs once", async (t) => {
  const ctx = await setup("idempotency");
  try {
    const company = await newCompany(ctx);
    const subjectId = await registerPerson(company);
    const payin = { subject_id: subjectId, value: "10.00", currency: "BRL" };

    await t.step("the same key and request again: the first answer, replayed, and no second pay-in", async () => {
      const eventsBefore = await countRows(ctx, "events", company.id);
      const first = await withKey(company, "payin-1", PAYINS, payin);
      assert.equal(first.status, 201, JSON.stringify(first.body));
      assert.equal(first.headers.get("idempotent-replayed"), null);
      const eventsOfOne = await countRows(ctx, "events", company.id) - eventsBefore;
      assert.ok(eventsOfOne > 0);

      const again = await withKey(company, "payin-1", PAYINS, payin);
      assert.equal(again.status, 201);
      assert.equal(again.headers.get("idempotent-replayed"), "true");
      assert.equal(again.headers.get("content-type"), first.headers.get("content-type"));
      assert.deepEqual(again.body, first.body);
      assert.equal(await countRows(ctx, "transactions", company.id), 1);
      assert.equal(await countRows(ctx, "events", company.id) - eventsBefore, eventsOfOne);
    });

    await t.step("without a key, the same request runs again", async () => {
      assert.equal((await company.post(PAYINS, payin)).status, 201);
      assert.equal(await countRows(ctx, "transactions", company.id), 2);
    });

    await t.step("the same key with another body, or another path, is refused with 422", async () => {
      const reused = { errors: { detail: "Idempotency-Key reused with a different request" } };
      const otherBody = await withKey(company, "payin-1", PAYINS, { ...payin, value: "11.00" });
      assert.deepEqual([otherBody.status, otherBody.body], [422, reused]);
      const otherPath = await withKey(company, "payin-1", "/api/sandbox/payouts", payin);
      assert.deepEqual([otherPath.status, otherPath.body], [422, reused]);
      // the body's bytes count, not its meaning: the same JSON spaced differently is another request
      const spaced = await withKey(company, "payin-1", PAYINS, JSON.stringify(payin, null, 2));
      assert.deepEqual([spaced.status, spaced.body], [422, reused]);
      assert.equal(await countRows(ctx, "transactions", company.id), 2);
    });

    await t.step("a refused request (4xx) is kept: the same key answers the same refusal", async () => {
      const first = await withKey(company, "bad-person", PEOPLE, { person: { document_type: "cpf" } });
      assert.equal(first.status, 400, JSON.stringify(first.body));
      const again = await withKey(company, "bad-person", PEOPLE, { person: { document_type: "cpf" } });
      assert.equal(again.status, 400);
      assert.equal(again.headers.get("idempotent-replayed"), "true");
      assert.deepEqual(again.body, first.body);
    });

    await t.step("another company may use the same key for its own request", async () => {
      const other = await newCompany(ctx);
      const otherSubject = await registerPerson(other);
      const res = await withKey(other, "payin-1", PAYINS, { ...payin, subject_id: otherSubject });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      assert.equal(res.headers.get("idempotent-replayed"), null);
      assert.equal(await countRows(ctx, "transactions", other.id), 1);
      assert.equal(await countRows(ctx, "transactions", company.id), 2);
    });

    await t.step("a key that is not 1 to 255 printable ASCII characters is a 400 naming the header", async () => {
      for (const key of ["", "x".repeat(256), "tab\there", "caf\u00e9"]) {
        const res = await withKey(company, key, PAYINS, payin);
        assert.equal(res.status, 400, `${JSON.stringify(key)}: ${JSON.stringify(res.body)}`);
        assert.deepEqual(Object.keys(res.body.errors), ["idempotency-key"], JSON.stringify(key));
      }
      assert.equal(await countRows(ctx, "transactions", company.id), 2);
      const longest = await withKey(company, "~ ".repeat(127) + "!", PAYINS, payin);
      assert.equal(longest.status, 201, JSON.stringify(longest.body));
    });

    await t.step("the key is only about POST: a GET with one is answered as usual", async () => {
      const res = await company.call("GET", PEOPLE, undefined, { "idempotency-key": "payin-1" });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get("idempotent-replayed"), null);
    });
  } finally {
    await ctx.close();
  }
});

Deno.test("Idempotency-Key: duplicates in flight never both run", async (t) => {
  const ctx = await setup("idempotency_concurrent");
  try {
    const company = await newCompany(ctx);
    const subjectId = await registerPerson(company);
    const payin = { subject_id: subjectId, value: "10.00", currency: "BRL" };

    await t.step("ten identical requests at once: one runs, the others answer 409 or its replay", async () => {
      const replies = await Promise.all(Array.from({ length: 10 }, () => withKey(company, "together", PAYINS, payin)));
      const ran = replies.filter((r) => r.status === 201 && r.headers.get("idempotent-replayed") === null);
      assert.equal(ran.length, 1, JSON.stringify(replies.map((r) => r.status)));
      for (const r of replies) {
        if (r === ran[0]) continue;
        if (r.status === 409) assert.equal(typeof r.body.errors.detail, "string");
        else {
          assert.equal(r.status, 201);
          assert.equal(r.headers.get("idempotent-replayed"), "true");
          assert.deepEqual(r.body, ran[0].body);
        }
      }
      assert.equal(await countRows(ctx, "transactions", company.id), 1);
    });

    await t.step("while the first request still runs, the same key answers 409; a crashed claim expires", async () => {
      // what a process that died in the middle of the request leaves behind: the claim, with no answer
      const body = JSON.stringify(payin);
      const fingerprint = await requestFingerprint("POST", PAYINS, new TextEncoder().encode(body));
      await ctx.sql`
        insert into idempotency_keys (company_id, key, request_hash, claim_id)
        values (${company.id}, 'crashed', ${fingerprint}, ${crypto.randomUUID()})`;
      const busy = await withKey(company, "crashed", PAYINS, body);
      assert.equal(busy.status, 409, JSON.stringify(busy.body));
      assert.equal(typeof busy.body.errors.detail, "string");
      assert.equal(await countRows(ctx, "transactions", company.id), 1);

      await ctx.sql`
        update idempotency_keys set locked_at = now() - interval '6 minutes'
        where company_id = ${company.id} and key = 'crashed'`;
      const retried = await withKey(company, "crashed", PAYINS, body);
      assert.equal(retried.status, 201, JSON.stringify(retried.body));
      assert.equal(retried.headers.get("idempotent-replayed"), null);
      assert.equal(await countRows(ctx, "transactions", company.id), 2);
      const replayed = await withKey(company, "crashed", PAYINS, body);
      assert.equal(replayed.headers.get("idempotent-replayed"), "true");
    });

    await t.step(
      "a server error is not kept: the same key runs the request again once the service is well",
      async () => {
        const other = await newCompany(ctx);
        // the request fails inside the service, as it would with the database in trouble
        await ctx.sql`alter table people rename to people_away`;
        let failed: Reply;
        try {
          failed = await withKey(other, "person-1", PEOPLE, personBody());
        } finally {
          await ctx.sql`alter table people_away rename to people`;
        }
        assert.equal(failed.status, 500, JSON.stringify(failed.body));
        const retried = await withKey(other, "person-1", PEOPLE, personBody());
        assert.equal(retried.status, 201, JSON.stringify(retried.body));
        assert.equal(retried.headers.get("idempotent-replayed"), null);
        const replayed = await withKey(other, "person-1", PEOPLE, personBody());
        assert.equal(replayed.status, 201);
        assert.equal(replayed.headers.get("idempotent-replayed"), "true");
      },
    );
  } finally {
    await ctx.close();
  }
});

Deno.test("Idempotency-Key: keys last 24 hours", async (t) => {
  const ctx = await setup("idempotency_expiry", { worker: true });
  try {
    const company = await newCompany(ctx);
    const subjectId = await registerPerson(company);
    const payin = { subject_id: subjectId, value: "10.00", currency: "BRL" };
    const age = (hours: number) =>
      ctx.sql`update idempotency_keys set inserted_at = now() - make_interval(hours => ${hours})
              where company_id = ${company.id}`;

    await t.step("a key 23 hours old still replays; past 24 hours the same request runs again", async () => {
      assert.equal((await withKey(company, "daily", PAYINS, payin)).status, 201);
      await age(23);
      assert.equal((await withKey(company, "daily", PAYINS, payin)).headers.get("idempotent-replayed"), "true");
      await age(25);
      const fresh = await withKey(company, "daily", PAYINS, payin);
      assert.equal(fresh.status, 201, JSON.stringify(fresh.body));
      assert.equal(fresh.headers.get("idempotent-replayed"), null);
      assert.equal(await countRows(ctx, "transactions", company.id), 2);
    });

    await t.step("the worker's periodic sweep removes keys past 24 hours", async () => {
      await age(25);
      await eventually("the expired key is pruned", async () => {
        const [row] = await ctx.sql`select count(*)::int as n from idempotency_keys where company_id = ${company.id}`;
        return row.n === 0;
      });
    });

    await t.step("pruning goes in bounded batches and leaves younger keys", async () => {
      await ctx.sql`
        insert into idempotency_keys (company_id, key, request_hash, claim_id, inserted_at)
        select ${company.id}, 'old-' || i, '\\x00', gen_random_uuid(), now() - interval '25 hours'
        from generate_series(1, 25) i`;
      await ctx.sql`
        insert into idempotency_keys (company_id, key, request_hash, claim_id)
        values (${company.id}, 'young', '\\x00', gen_random_uuid())`;
      // the worker's sweep may take some of them meanwhile: what matters is the bound and what stays
      const removed = await pruneIdempotencyKeys(ctx.sql, { batchSize: 10, maxBatches: 2 });
      assert.ok(removed <= 20, `removed ${removed}`);
      await pruneIdempotencyKeys(ctx.sql, { batchSize: 10, maxBatches: 10 });
      const keys = await ctx.sql`select key from idempotency_keys where company_id = ${company.id}`;
      assert.deepEqual(keys.map((k) => k.key), ["young"]);
    });
  } finally {
    await ctx.close();
  }
});

Deno.test("the OpenAPI document declares Idempotency-Key on every POST under /api", async () => {
  const ctx = await setup("idempotency_openapi");
  try {
    const doc = await (await ctx.app.request("/openapi.json")).json();
    assert.equal(doc.components.parameters.IdempotencyKey.in, "header");
    assert.equal(doc.components.parameters.IdempotencyKey.name, "Idempotency-Key");
    let posts = 0;
    for (const [path, item] of Object.entries<Record<string, { parameters?: { $ref?: string }[] }>>(doc.paths)) {
      for (const [method, operation] of Object.entries(item)) {
        const declared = (operation.parameters ?? []).some((p) => p.$ref === "#/components/parameters/IdempotencyKey");
        assert.equal(declared, method === "post" && path.startsWith("/api/"), `${method} ${path}`);
        if (declared) posts++;
      }
    }
    assert.ok(posts > 5, `${posts} POST operations`);
  } finally {
    await ctx.close();
  }
});

/** Each row of a company's keys, every column as text: bytea both as the text its bytes spell and as hex. */
async function storedKeys(sql: Sql, companyId: string): Promise<string[]> {
  const rows = await sql`select * from idempotency_keys where company_id = ${companyId} order by key`;
  assert.ok(rows.length > 0, "no stored key");
  return rows.map((row) =>
    Object.values(row).map((v) =>
      v instanceof Uint8Array ? `${new TextDecoder().decode(v)} ${v.toHex()}` : JSON.stringify(v)
    ).join(" ")
  );
}

function assertNoSecretIn(stored: string[], secrets: string[]) {
  assert.ok(secrets.length > 0 && secrets.every((s) => typeof s === "string" && s.length >= 32), "secrets to look for");
  for (const row of stored) {
    for (const secret of secrets) {
      const hex = new TextEncoder().encode(secret).toHex();
      assert.ok(!row.includes(secret) && !row.includes(hex), `a signing secret in idempotency_keys: ${row}`);
    }
  }
}

/** A POST with an Idempotency-Key through the app, its body kept as bytes. */
async function rawPost(ctx: TestContext, company: Company, key: string, path: string, body = "") {
  const res = await ctx.app.request(path, {
    method: "POST",
    headers: { authorization: `Bearer ${company.token}`, "content-type": "application/json", "idempotency-key": key },
    body: body || undefined,
  });
  const bytes = new Uint8Array(await res.arrayBuffer());
  return { status: res.status, headers: res.headers, bytes, json: JSON.parse(new TextDecoder().decode(bytes)) };
}

Deno.test("Idempotency-Key: stored answers are sealed, so the signing secrets they carry are in no column", async (t) => {
  const ctx = await setup("idempotency_sealed");
  try {
    const company = await newCompany(ctx);
    const create = JSON.stringify({ url: "https://example.com/sealed" });

    type Answer = Awaited<ReturnType<typeof rawPost>>;
    let id = "";
    let created: Answer, rotated: Answer, enabled: Answer;
    await t.step(
      "creating, rotating and enabling an endpoint with a key: its secrets are in no stored column",
      async () => {
        created = await rawPost(ctx, company, "create", ENDPOINTS, create);
        assert.equal(created.status, 201, JSON.stringify(created.json));
        id = created.json.data.id;
        rotated = await rawPost(ctx, company, "rotate", `${ENDPOINTS}/${id}/rotate_secret`);
        assert.equal(rotated.status, 200, JSON.stringify(rotated.json));
        assert.equal((await company.delete(`${ENDPOINTS}/${id}`)).status, 200);
        enabled = await rawPost(ctx, company, "enable", `${ENDPOINTS}/${id}/enable`);
        assert.equal(enabled.status, 200, JSON.stringify(enabled.json));
        const secrets = [created.json.data.secret, rotated.json.data.secret, enabled.json.data.previous_secret];
        assert.equal(enabled.json.data.secret, rotated.json.data.secret);

        const stored = await storedKeys(ctx.sql, company.id);
        assert.equal(stored.length, 3);
        assertNoSecretIn(stored, secrets);
        const bodies = await ctx.sql<{ body: Uint8Array }[]>`
        select response_body as body from idempotency_keys where company_id = ${company.id}`;
        const box = await createSecretBox(ctx.config.secretEncryptionKey!);
        for (const { body } of bodies) assert.ok(new TextDecoder().decode(body).startsWith(box.currentPrefix));
      },
    );

    await t.step("each key replays the same status, content type and bytes, secrets included", async () => {
      for (
        const [first, key, path, body] of [
          [created, "create", ENDPOINTS, create],
          [rotated, "rotate", `${ENDPOINTS}/${id}/rotate_secret`, ""],
          [enabled, "enable", `${ENDPOINTS}/${id}/enable`, ""],
        ] as const
      ) {
        const again = await rawPost(ctx, company, key, path, body);
        assert.equal(again.status, first.status, key);
        assert.equal(again.headers.get("idempotent-replayed"), "true", key);
        assert.equal(again.headers.get("content-type"), first.headers.get("content-type"), key);
        assert.deepEqual(again.bytes, first.bytes, key);
      }
      // replayed, not run again: the secret is still the one rotated in
      assert.equal((await company.get(`${ENDPOINTS}/${id}`)).body.data.secret, rotated.json.data.secret);
    });

    await t.step(
      "an answer copied into another key's row is not replayed: 500, and the request is not run",
      async () => {
        const other = await newCompany(ctx);
        const created = await rawPost(ctx, other, "create", ENDPOINTS, create);
        const id = created.json.data.id;
        const rotated = await rawPost(ctx, other, "rotate", `${ENDPOINTS}/${id}/rotate_secret`);
        assert.equal(rotated.status, 200);
        // the creation's answer moved into the rotation's row of the same company
        await ctx.sql`
        update idempotency_keys set response_body = (
          select response_body from idempotency_keys where company_id = ${other.id} and key = 'create')
        where company_id = ${other.id} and key = 'rotate'`;
        const moved = await rawPost(ctx, other, "rotate", `${ENDPOINTS}/${id}/rotate_secret`);
        assert.equal(moved.status, 500);
        assert.deepEqual(moved.json, { errors: { detail: UNREADABLE_DETAIL } });
        assert.equal(moved.headers.get("idempotent-replayed"), null);
        assert.equal((await other.get(`${ENDPOINTS}/${id}`)).body.data.secret, rotated.json.data.secret, "not rotated");

        // another company's answer under the same key, in this company's row
        await ctx.sql`
        update idempotency_keys set response_body = (
          select response_body from idempotency_keys where company_id = ${company.id} and key = 'create')
        where company_id = ${other.id} and key = 'create'`;
        const foreign = await rawPost(ctx, other, "create", ENDPOINTS, create);
        assert.deepEqual([foreign.status, foreign.json], [500, { errors: { detail: UNREADABLE_DETAIL } }]);
        assert.equal((await other.get(ENDPOINTS)).body.data.length, 1, "no second endpoint created");

        // an answer in plain text is not one this service stored (they are sealed at start): refused the same way
        await ctx.sql`
        update idempotency_keys set response_body = ${created.bytes}
        where company_id = ${other.id} and key = 'create'`;
        const plain = await rawPost(ctx, other, "create", ENDPOINTS, create);
        assert.deepEqual([plain.status, plain.json], [500, { errors: { detail: UNREADABLE_DETAIL } }]);
      },
    );
  } finally {
    await ctx.close();
  }
});

Deno.test("Idempotency-Key: answers an earlier version stored in plain text are sealed at start and still replay", async (t) => {
  setLogLevel("silent");
  const url = await migratedDatabase("idempotency_upgrade");
  const sql = connect(url, { max: 2 });
  const company = await httpCompany();
  const newKey = () => crypto.getRandomValues(new Uint8Array(32)).toHex();
  const firstKey = newKey();
  const secondKey = newKey();
  const body = JSON.stringify({ url: "https://example.com/upgraded" });
  const secrets = Array.from({ length: 5 }, () => crypto.getRandomValues(new Uint8Array(32)).toHex());
  const answerOf = (i: number) =>
    new TextEncoder().encode(JSON.stringify({ data: { id: crypto.randomUUID(), secret: secrets[i] } }));
  const replay = async (base: string, key: string) => {
    const res = await fetch(`${base}${ENDPOINTS}`, {
      method: "POST",
      headers: { authorization: `Bearer ${company.token}`, "content-type": "application/json", "idempotency-key": key },
      body,
    });
    return { status: res.status, replayed: res.headers.get("idempotent-replayed"), text: await res.text() };
  };
  const prefixes = async () =>
    (await sql<{ head: string }[]>`
      select convert_from(substring(response_body from 1 for 16), 'UTF8') as head from idempotency_keys
      where company_id = ${company.id} order by key`).map((r) => r.head);

  try {
    await migrate(sql, url);
    const fingerprint = await requestFingerprint("POST", ENDPOINTS, new TextEncoder().encode(body));
    await t.step(
      "keys as the earlier version left them: answers, a signing secret included, in plain text",
      async () => {
        for (let i = 0; i < secrets.length; i++) {
          await sql`
          insert into idempotency_keys
            (company_id, key, request_hash, claim_id, response_status, response_content_type, response_body)
          values (${company.id}, ${`old-${i}`}, ${fingerprint}, ${crypto.randomUUID()}, 201, 'application/json',
                  ${answerOf(i)})`;
        }
        // and one still running: no answer to seal
        await sql`
        insert into idempotency_keys (company_id, key, request_hash, claim_id)
        values (${company.id}, 'running', ${fingerprint}, ${crypto.randomUUID()})`;
      },
    );

    await t.step("the first start seals them; they replay the same bytes", async () => {
      const service = await startService(url, { SECRET_ENCRYPTION_KEY: firstKey });
      try {
        assertNoSecretIn(await storedKeys(sql, company.id), secrets);
        const box = await createSecretBox(Uint8Array.fromHex(firstKey));
        assert.deepEqual(await prefixes(), [...secrets.map(() => box.currentPrefix), null]);
        const again = await replay(service.base, "old-0");
        assert.deepEqual([again.status, again.replayed], [201, "true"]);
        assert.equal(JSON.parse(again.text).data.secret, secrets[0]);
      } finally {
        await service.stop();
      }
    });

    await t.step("deno task reseal-secrets moves them to a new key; then the old key is no longer needed", async () => {
      const keys = { SECRET_ENCRYPTION_KEY: secondKey, SECRET_ENCRYPTION_KEY_PREVIOUS: firstKey };
      const command = await runTask(url, ["reseal-secrets"], { LOG_LEVEL: "silent", JWT_SECRET: undefined, ...keys });
      assert.equal(command.code, 0, command.stderr);
      assert.match(command.stdout, /\n5 stored idempotent answer\(s\) re-sealed\n/);
      const box = await createSecretBox(Uint8Array.fromHex(secondKey));
      assert.deepEqual(await prefixes(), [...secrets.map(() => box.currentPrefix), null]);
      assertNoSecretIn(await storedKeys(sql, company.id), secrets);

      const service = await startService(url, { SECRET_ENCRYPTION_KEY: secondKey });
      try {
        for (let i = 0; i < secrets.length; i++) {
          const again = await replay(service.base, `old-${i}`);
          assert.deepEqual([again.status, again.replayed], [201, "true"]);
          assert.equal(JSON.parse(again.text).data.secret, secrets[i]);
        }
      } finally {
        await service.stop();
      }
    });

    await t.step("the pass goes in bounded batches, and a second pass finds nothing to do", async () => {
      await sql`update idempotency_keys set response_body = ${answerOf(0)} where company_id = ${company.id}
                and response_body is not null`;
      const box = await createSecretBox(Uint8Array.fromHex(secondKey));
      assert.deepEqual(await sealStoredAnswers(sql, box, { reseal: false, batchSize: 2 }), {
        sealed: 5,
        unreadable: 0,
      });
      assert.deepEqual(await sealStoredAnswers(sql, box, { reseal: false, batchSize: 2 }), {
        sealed: 0,
        unreadable: 0,
      });
      // what no key given opens is counted apart and left as it is
      const stranger = await createSecretBox(crypto.getRandomValues(new Uint8Array(32)));
      assert.deepEqual(await sealStoredAnswers(sql, stranger, { reseal: true }), { sealed: 0, unreadable: 5 });
    });
  } finally {
    await sql.end();
    await dropDatabase(url);
  }
});
