import assert from "node:assert/strict";
import { type Company, eventually, newCompany, type Reply, setup, type TestContext } from "../helpers.ts";
import { pruneIdempotencyKeys, requestFingerprint } from "../../domain/platform/idempotency.ts";

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
