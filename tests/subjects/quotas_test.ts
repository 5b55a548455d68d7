/**
 * What one company may store (domain/subjects/quotas.ts): people, bank accounts, documents and bytes, refused past the
 * quota with nothing stored, exact at the edge with concurrent creates on two instances.
 */
import assert from "node:assert/strict";
import { runMigrations } from "graphile-worker";
import { createApp } from "../../routes/app.ts";
import { connect } from "../../domain/infra/db.ts";
import { setLogLevel } from "../../domain/basics/log.ts";
import { workerLogger } from "../../domain/infra/worker.ts";
import { migrate, migrationFiles } from "../../domain/infra/migrate.ts";
import { cnpj, cpf } from "../support/check_digits.ts";
import { international } from "../support/bank_accounts.ts";
import { type Company, dropDatabase, freshDatabase, newCompany, type Reply, setup } from "../support/helpers.ts";
import { textDocument } from "../support/subjects.ts";

const PEOPLE = "/api/v1/subject/people";
const COMPANIES = "/api/v1/subject/companies";

let serial = 100_000_000;
/** A valid CPF no other call of this file gives. */
const newCpf = () => cpf(String(serial++));

const person = (documentNumber: string, extra: Record<string, unknown> = {}) => ({
  person: {
    document_number: documentNumber,
    document_type: "cpf",
    social_name: "Ana Souza",
    fiscal_country: "BRA",
    ...extra,
  },
});

const pixAccount = () => ({
  bank_account: { currency: "BRL", owner_name: "Ana Souza", pix_info: { type: "EVP", key: crypto.randomUUID() } },
});

function assertQuota(res: Reply, detail: string) {
  assert.equal(res.status, 422, JSON.stringify(res.body));
  assert.deepEqual(res.body, { errors: { detail } });
}

async function registered(company: Company, documentNumber = newCpf()): Promise<string> {
  const res = await company.post(PEOPLE, person(documentNumber));
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body.data.id;
}

async function peopleOf(company: Company): Promise<string[]> {
  const res = await company.get(PEOPLE);
  assert.equal(res.status, 200);
  return res.body.data.map((p: { document_number: string }) => p.document_number);
}

Deno.test("a company at its people quota: new subjects are refused, the ones it has can still be registered again", async (t) => {
  const ctx = await setup("quota_people", { env: { QUOTA_PEOPLE_PER_COMPANY: "3" } });
  const company = await newCompany(ctx);
  const full = "quota exceeded: at most 3 people and company customers per company (QUOTA_PEOPLE_PER_COMPANY)";
  const first = newCpf();
  let firstId = "";

  await t.step("three people fit, the fourth answers 422 naming the quota and is not stored", async () => {
    firstId = await registered(company, first);
    await registered(company);
    await registered(company);
    const fourth = newCpf();
    assertQuota(await company.post(PEOPLE, person(fourth)), full);
    assert.equal((await peopleOf(company)).length, 3);
    assert.ok(!(await peopleOf(company)).includes(fourth));
  });

  await t.step("registering a CPF already there again updates that person (200, same id), quota or not", async () => {
    const again = await company.post(PEOPLE, person(first, { social_name: "Ana Souza Lima" }));
    assert.equal(again.status, 200, JSON.stringify(again.body));
    assert.equal(again.body.data.id, firstId);
    assert.equal(again.body.data.social_name, "Ana Souza Lima");
    // and with a document: no new subject, only a document
    const withDocument = await company.post(PEOPLE, person(first, { documents: [textDocument(10)] }));
    assert.equal(withDocument.status, 200, JSON.stringify(withDocument.body));
    assert.equal(withDocument.body.data.documents.length, 1);
    assert.equal((await peopleOf(company)).length, 3);
  });

  await t.step("a company customer counts in the same quota: refused too", async () => {
    const res = await company.post(COMPANIES, {
      company: {
        document_type: "cnpj",
        document_number: cnpj("453718460001"),
        social_name: "Ex Ltda",
        fiscal_country: "BR",
      },
    });
    assertQuota(res, full);
    assert.deepEqual((await company.get(COMPANIES)).body.data, []);
  });

  await t.step("another company has its own quota", async () => {
    const other = await newCompany(ctx);
    await registered(other, first);
  });

  await ctx.close();
});

Deno.test("a company customer takes a place of the people quota", async () => {
  const ctx = await setup("quota_subjects", { env: { QUOTA_PEOPLE_PER_COMPANY: "1" } });
  const company = await newCompany(ctx);
  const customer = {
    company: {
      document_type: "cnpj",
      document_number: cnpj("453718460001"),
      social_name: "Ex Ltda",
      fiscal_country: "BR",
    },
  };
  assert.equal((await company.post(COMPANIES, customer)).status, 201);
  assert.equal((await company.post(COMPANIES, customer)).status, 200, "its own registration again is an update");
  assertQuota(
    await company.post(PEOPLE, person(newCpf())),
    "quota exceeded: at most 1 people and company customers per company (QUOTA_PEOPLE_PER_COMPANY)",
  );
  await ctx.close();
});

Deno.test("bank accounts per company: a subject's and the company's own count, the internal ones do not", async (t) => {
  const ctx = await setup("quota_bank_accounts", { env: { QUOTA_BANK_ACCOUNTS_PER_COMPANY: "2" } });
  const company = await newCompany(ctx);
  const full = "quota exceeded: at most 2 bank accounts per company (QUOTA_BANK_ACCOUNTS_PER_COMPANY)";
  const ana = await registered(company);
  const bia = await registered(company);

  await t.step("two accounts fit (the six internal accounts are not counted)", async () => {
    const own = await company.get("/api/v1/bank_accounts");
    assert.equal(own.body.data.filter((a: { internal: boolean }) => a.internal).length, 6);
    assert.equal((await company.post(`/api/v1/subject/${ana}/bank_accounts`, pixAccount())).status, 201);
    assert.equal((await company.post(`/api/v1/subject/${bia}/bank_accounts`, pixAccount())).status, 201);
  });

  await t.step("a third one answers 422, for a subject or for the company itself, and is not stored", async () => {
    assertQuota(await company.post(`/api/v1/subject/${ana}/bank_accounts`, pixAccount()), full);
    assertQuota(await company.post("/api/v1/bank_accounts", { bank_account: international() }), full);
    assert.equal((await company.get(`/api/v1/subject/${ana}/bank_accounts`)).body.data.length, 1);
  });

  await t.step("updating an account still works at the quota", async () => {
    const [account] = (await company.get(`/api/v1/subject/${bia}/bank_accounts`)).body.data;
    const res = await company.put(`/api/v1/subject/${bia}/bank_accounts/${account.id}`, {
      bank_account: { nickname: "salary" },
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
  });

  await ctx.close();
});

Deno.test("documents per company, uploaded alone or inside a person's registration", async (t) => {
  const ctx = await setup("quota_documents", { env: { QUOTA_DOCUMENTS_PER_COMPANY: "3" } });
  const company = await newCompany(ctx);
  const full = "quota exceeded: at most 3 documents per company (QUOTA_DOCUMENTS_PER_COMPANY)";
  const ana = await registered(company);
  const upload = (subject: string, document: unknown) =>
    company.post(`/api/v1/subject/${subject}/documents`, { document });

  await t.step("two uploads fit", async () => {
    assert.equal((await upload(ana, textDocument(10))).status, 201);
    assert.equal(
      (await upload(ana, { labels: ["rg-photo"], file_type: "image/png", file_url: "https://x.example/a.png" })).status,
      201,
    );
  });

  await t.step(
    "a new person bringing two documents would make four: 422, and neither the person nor a file stays",
    async () => {
      const bia = newCpf();
      const res = await company.post(PEOPLE, person(bia, { documents: [textDocument(10), textDocument(20)] }));
      assertQuota(res, full);
      assert.ok(!(await peopleOf(company)).includes(bia));
      const [{ n }] = await ctx.sql<
        { n: number }[]
      >`select count(*)::int as n from documents where company_id = ${company.id}`;
      assert.equal(n, 2);
    },
  );

  await t.step("with one document the same person fits; after that nothing more does", async () => {
    const res = await company.post(PEOPLE, person(newCpf(), { documents: [textDocument(10)] }));
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assertQuota(await upload(ana, textDocument(10)), full);
    assertQuota(
      await upload(res.body.data.id, { labels: ["x"], file_type: "image/png", file_url: "https://x.example/b.png" }),
      full,
    );
    assert.equal((await company.get(`/api/v1/subject/${ana}/documents`)).body.data.length, 2);
  });

  await t.step("an operator erasing a document gives its place back", async () => {
    const [doc] = (await company.get(`/api/v1/subject/${ana}/documents`)).body.data;
    await ctx.sql.begin(async (tx) => {
      await tx`delete from document_blobs where document_id = ${doc.id}`;
      await tx`delete from documents where company_id = ${company.id} and id = ${doc.id}`;
    });
    assert.equal((await upload(ana, textDocument(10))).status, 201);
    assertQuota(await upload(ana, textDocument(10)), full);
  });

  await ctx.close();
});

Deno.test("bytes of document files per company", async (t) => {
  const ctx = await setup("quota_document_bytes", { env: { QUOTA_DOCUMENT_BYTES_PER_COMPANY: "1000" } });
  const company = await newCompany(ctx);
  const full = "quota exceeded: at most 1000 bytes of document files per company (QUOTA_DOCUMENT_BYTES_PER_COMPANY)";
  const ana = await registered(company);
  const upload = (document: unknown) => company.post(`/api/v1/subject/${ana}/documents`, { document });

  await t.step("600 bytes fit; 500 more would pass 1000: 422, nothing stored", async () => {
    const first = await upload(textDocument(600));
    assert.equal(first.status, 201, JSON.stringify(first.body));
    assert.equal(first.body.data.size, 600);
    assertQuota(await upload(textDocument(500)), full);
    assert.equal((await company.get(`/api/v1/subject/${ana}/documents`)).body.data.length, 1);
  });

  await t.step("a smaller file still fits, up to the last byte", async () => {
    assert.equal((await upload(textDocument(400))).status, 201);
    assertQuota(await upload(textDocument(1)), full);
  });

  await t.step(
    "the same inside a person's registration; a document given by URL has no bytes here and fits",
    async () => {
      assertQuota(await company.post(PEOPLE, person(newCpf(), { documents: [textDocument(1)] })), full);
      const byUrl = { labels: ["rg-photo"], file_type: "image/png", file_url: "https://x.example/a.png" };
      assert.equal((await upload(byUrl)).status, 201);
    },
  );

  await t.step("erasing a file gives its bytes back", async () => {
    const docs = (await company.get(`/api/v1/subject/${ana}/documents`)).body.data;
    const big = docs.find((d: { size: number | null }) => d.size === 600);
    await ctx.sql.begin(async (tx) => {
      await tx`delete from document_blobs where document_id = ${big.id}`;
      await tx`delete from documents where company_id = ${company.id} and id = ${big.id}`;
    });
    assert.equal((await upload(textDocument(600))).status, 201);
    assertQuota(await upload(textDocument(1)), full);
  });

  await ctx.close();
});

Deno.test("at the edge, concurrent creates on two instances never both take the last place", async (t) => {
  const ctx = await setup("quota_concurrent", {
    env: {
      QUOTA_PEOPLE_PER_COMPANY: "5",
      QUOTA_DOCUMENTS_PER_COMPANY: "4",
      QUOTA_DOCUMENT_BYTES_PER_COMPANY: "100000",
    },
  });
  // a second instance: its own app and its own pool on the same database
  const secondSql = connect(ctx.url, { max: 10 });
  const second = createApp({ ...ctx.deps, sql: secondSql, processId: crypto.randomUUID() });
  const onFirst = await newCompany(ctx);
  // the same company (its token) calling the second instance
  const viaSecond = clientOf(second, onFirst.token);

  await t.step("20 registrations of new people at once, quota 5: exactly 5 are created", async () => {
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => (i % 2 ? onFirst : viaSecond).post(PEOPLE, person(newCpf()))),
    );
    assert.deepEqual(
      answers.map((a) => a.status).sort(),
      [...Array(5).fill(201), ...Array(15).fill(422)],
      JSON.stringify(answers.filter((a) => a.status !== 201).map((a) => a.body)),
    );
    assert.equal((await peopleOf(onFirst)).length, 5);
  });

  await t.step("12 uploads at once over the five people, quota 4: exactly 4 are stored", async () => {
    // spread over subjects: uploads to one subject take turns on its row anyway (the status review locks it)
    const subjects = (await onFirst.get(PEOPLE)).body.data.map((p: { id: string }) => p.id);
    const answers = await Promise.all(
      Array.from(
        { length: 12 },
        (_, i) =>
          (i % 2 ? onFirst : viaSecond).post(`/api/v1/subject/${subjects[i % subjects.length]}/documents`, {
            document: textDocument(100),
          }),
      ),
    );
    assert.deepEqual(answers.map((a) => a.status).sort(), [...Array(4).fill(201), ...Array(8).fill(422)]);
    const [{ n }] = await ctx.sql<
      { n: number }[]
    >`select count(*)::int as n from documents where company_id = ${onFirst.id}`;
    assert.equal(n, 4);
  });

  await secondSql.end({ timeout: 2 });
  await ctx.close();
});

Deno.test("far from the edge creates on two instances are counted apart, and still stop exactly at the quota", async () => {
  // 40 places: shared out over the stripes, most creates are counted on their own stripe, the last ones share out again
  const ctx = await setup("quota_concurrent_wide", { env: { QUOTA_PEOPLE_PER_COMPANY: "40" } });
  const secondSql = connect(ctx.url, { max: 10 });
  const second = createApp({ ...ctx.deps, sql: secondSql, processId: crypto.randomUUID() });
  const company = await newCompany(ctx);
  const viaSecond = clientOf(second, company.token);
  for (const round of [30, 60]) {
    const answers = await Promise.all(
      Array.from({ length: round }, (_, i) => (i % 2 ? company : viaSecond).post(PEOPLE, person(newCpf()))),
    );
    assert.ok(answers.every((a) => a.status === 201 || a.status === 422), JSON.stringify(answers.map((a) => a.body)));
  }
  const stored = await ctx.sql<{ n: number }[]>`select count(*)::int as n from people where company_id = ${company.id}`;
  assert.equal(stored[0].n, 40);
  assert.equal((await peopleOf(company)).length, 40);
  await secondSql.end({ timeout: 2 });
  await ctx.close();
});

Deno.test("a quota changed in the settings applies from the next create", async () => {
  const ctx = await setup("quota_settings", { env: { QUOTA_PEOPLE_PER_COMPANY: "100" } });
  // the same database served with the quota lowered to 3, as after a restart with new settings
  const lowered = createApp({
    ...ctx.deps,
    config: { ...ctx.config, limits: { ...ctx.config.limits, peoplePerCompany: 3 } },
  });
  const company = await newCompany(ctx);
  for (let i = 0; i < 3; i++) await registered(company);
  const onLowered = clientOf(lowered, company.token);
  assertQuota(
    await onLowered.post(PEOPLE, person(newCpf())),
    "quota exceeded: at most 3 people and company customers per company (QUOTA_PEOPLE_PER_COMPANY)",
  );
  // raised again, the room is there
  await registered(company);
  assert.equal((await peopleOf(company)).length, 4);
  await ctx.close();
});

/** A client of `app` with an existing company's token. */
function clientOf(app: ReturnType<typeof createApp>, token: string) {
  const call = async (method: string, path: string, body?: unknown): Promise<Reply> => {
    const res = await app.request(path, {
      method,
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null, headers: res.headers };
  };
  return { post: (path: string, body?: unknown) => call("POST", path, body), get: (path: string) => call("GET", path) };
}

Deno.test("the counters start from what a company stored before the quotas existed", async () => {
  setLogLevel("silent");
  const url = await freshDatabase("quota_backfill");
  const sql = connect(url, { max: 2 });
  try {
    // the schema as it was before sql/0022, with a company's history in it
    await runMigrations({ connectionString: url, logger: workerLogger() });
    await sql`create table schema_migrations (version text primary key, applied_at timestamptz not null default now())`;
    for (const file of (await migrationFiles()).filter((f) => f.version < "0022")) {
      await sql.begin(async (tx) => {
        await tx.unsafe(file.text);
        await tx`insert into schema_migrations (version) values (${file.version})`;
      });
    }
    const company = crypto.randomUUID();
    await sql`insert into companies (id) values (${company})`;
    const people = [crypto.randomUUID(), crypto.randomUUID()];
    for (const [i, id] of people.entries()) {
      await sql`insert into people (id, company_id, document_type, document_number, social_name, fiscal_country)
                values (${id}, ${company}, 'cpf', ${newCpf()}, ${"P" + i}, 'BRA')`;
    }
    await sql`insert into documents (id, company_id, person_id, labels, file_type, file_name, size)
              values (${crypto.randomUUID()}, ${company}, ${people[0]}, '{}', 'text/plain', 'a.txt', 700),
                     (${crypto.randomUUID()}, ${company}, ${people[1]}, '{}', 'text/plain', 'b.txt', 300),
                     (${crypto.randomUUID()}, ${company}, ${people[1]}, '{}', 'image/png', null, null)`;
    await sql`insert into bank_accounts (id, company_id, subject_id, country, currency)
              values (${crypto.randomUUID()}, ${company}, ${people[0]}, 'BRA', 'BRL')`;

    await migrate(sql, url);
    const [usage] = await sql`
      select people, bank_accounts, documents, document_bytes::int as bytes from company_usage where company_id = ${company}`;
    assert.deepEqual({ ...usage }, { people: 2, bank_accounts: 1, documents: 3, bytes: 1000 });
  } finally {
    await sql.end();
    await dropDatabase(url);
  }
});
