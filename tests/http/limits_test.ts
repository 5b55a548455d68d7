/**
 * The per-company limits an integrator meets through the API: requests per second, sandbox calls, active webhook
 * endpoints and their concurrency, each refused with its documented answer (docs/limits.md).
 */
import assert from "node:assert/strict";
import { type Company, newCompany, type Reply, setup, type TestContext } from "../support/helpers.ts";
import { ENDPOINTS } from "../support/endpoints.ts";

const PEOPLE = "/api/v1/subject/people";

function assertTooMany(res: Reply) {
  assert.equal(res.status, 429, JSON.stringify(res.body));
  assert.deepEqual(res.body, { errors: { detail: "Too Many Requests" } });
  assert.match(res.headers.get("retry-after") ?? "", /^[1-9]\d*$/);
}

async function slotRows(ctx: TestContext, company: Company): Promise<number> {
  const [{ n }] = await ctx.sql<{ n: number }[]>`
    select count(*)::int as n from webhook_slots s join webhook_endpoints e on e.id = s.endpoint_id
    where e.company_id = ${company.id}`;
  return n;
}

Deno.test("requests per second per company", async (t) => {
  // one a second with a burst of 3: a fourth request within the second waits for it
  const ctx = await setup("limits_rate", { env: { RATE_LIMIT_PER_SECOND: "1", RATE_LIMIT_BURST: "3" } });
  const company = await newCompany(ctx);
  const other = await newCompany(ctx);
  let retryAfter = "";

  await t.step("past the burst: 429 with Retry-After and the one error body, for any route", async () => {
    for (let i = 0; i < 3; i++) assert.equal((await company.get(PEOPLE)).status, 200);
    const refused = await company.get(PEOPLE);
    assertTooMany(refused);
    retryAfter = refused.headers.get("retry-after")!;
    assert.equal(retryAfter, "1");
    assertTooMany(await company.post(ENDPOINTS, { url: "https://example.com/hooks" }));
    const [{ n }] = await ctx.sql`select count(*)::int as n from webhook_endpoints where company_id = ${company.id}`;
    assert.equal(n, 0, "a refused request is not handled");
  });

  await t.step("another company has its own allowance", async () => {
    assert.equal((await other.get(PEOPLE)).status, 200);
  });

  await t.step("after waiting as told, requests go through again", async () => {
    await new Promise((r) => setTimeout(r, Number(retryAfter) * 1000));
    assert.equal((await company.get(PEOPLE)).status, 200);
  });

  await t.step("without a valid token the answer stays 401, and health checks are never limited", async () => {
    const anonymous = await ctx.app.request(PEOPLE);
    assert.equal(anonymous.status, 401);
    for (let i = 0; i < 10; i++) assert.equal((await ctx.app.request("/healthz")).status, 200);
  });

  await ctx.close();
});

Deno.test("sandbox calls per company per second", async (t) => {
  const ctx = await setup("limits_sandbox", {
    env: { SANDBOX_RATE_LIMIT_PER_SECOND: "0.1", SANDBOX_RATE_LIMIT_BURST: "2" },
  });
  const company = await newCompany(ctx);
  const person = (await company.post(PEOPLE, {
    person: { document_number: "52998224725", document_type: "cpf", social_name: "Ana Souza", fiscal_country: "BRA" },
  })).body.data;
  const payin = { subject_id: person.id, value: "10.00", currency: "BRL" };

  await t.step("two sandbox calls, then 429 for up to ten seconds; the rest of the API still answers", async () => {
    assert.equal((await company.post("/api/sandbox/payins", payin)).status, 201);
    assert.equal((await company.post("/api/sandbox/card_payments", { ...payin, outcome: "approved" })).status, 201);
    const third = await company.post("/api/sandbox/payins", payin);
    assertTooMany(third);
    const wait = Number(third.headers.get("retry-after"));
    assert.ok(wait >= 1 && wait <= 10, `the next token within ten seconds, not ${wait}`);
    assert.equal((await company.get(`/api/v1/subject/${person.id}/transactions`)).body.data.length, 2);
  });

  await ctx.close();
});

Deno.test("active webhook endpoints per company", async (t) => {
  const ctx = await setup("limits_endpoints", { env: { WEBHOOK_ENDPOINTS_PER_COMPANY: "3" } });
  const company = await newCompany(ctx);

  await t.step("the fourth active endpoint is refused with 422 saying why", async () => {
    for (let i = 0; i < 3; i++) {
      const res = await company.post(ENDPOINTS, { url: `https://example.com/${i}` });
      assert.equal(res.status, 201, JSON.stringify(res.body));
    }
    const fourth = await company.post(ENDPOINTS, { url: "https://example.com/3" });
    assert.equal(fourth.status, 422);
    assert.deepEqual(fourth.body, {
      errors: { detail: "at most 3 active endpoints per company, pull streams included: disable or delete one first" },
    });
  });

  await t.step("disabling one makes room", async () => {
    const [first] = (await company.get(ENDPOINTS)).body.data;
    assert.equal((await company.delete(`${ENDPOINTS}/${first.id}`)).status, 200);
    assert.equal((await company.post(ENDPOINTS, { url: "https://example.com/3" })).status, 201);
    assert.equal((await company.get(ENDPOINTS)).body.data.length, 4, "the disabled one is still listed");
  });

  await t.step("requests at the same moment cannot both take the last place", async () => {
    const racer = await newCompany(ctx);
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) => racer.post(ENDPOINTS, { url: `https://example.com/race/${i}` })),
    );
    assert.deepEqual(answers.map((a) => a.status).sort(), [201, 201, 201, 422, 422, 422, 422, 422]);
  });

  await t.step("another company counts its own endpoints", async () => {
    const other = await newCompany(ctx);
    assert.equal((await other.post(ENDPOINTS, { url: "https://example.com/x" })).status, 201);
  });

  await ctx.close();
});

Deno.test("concurrency shared by a company's endpoints bounds its slot rows", async (t) => {
  const ctx = await setup("limits_concurrency", { env: { WEBHOOK_CONCURRENCY_PER_COMPANY: "25" } });
  const company = await newCompany(ctx);
  let made = 0;
  // a URL of its own each: one active endpoint per URL (docs/webhooks.md, "One endpoint per URL")
  const create = (max?: number) =>
    company.post(ENDPOINTS, {
      url: `https://example.com/h/${made++}`,
      ...(max === undefined ? {} : { max_concurrency: max }),
    });

  let a: Reply, b: Reply;

  await t.step("endpoints take max_concurrency from the total until it is spent", async () => {
    a = await create(); // the default, 10
    b = await create(10);
    assert.equal(a.status, 201);
    assert.equal(b.status, 201);
    const c = await create(10);
    assert.equal(c.status, 422);
    assert.deepEqual(c.body, {
      errors: { max_concurrency: ["must be less than or equal to 5: the company's active endpoints share 25"] },
    });
    assert.equal((await create(5)).status, 201);
    const none = await create(1);
    assert.deepEqual(none.body, {
      errors: { max_concurrency: ["has no room left: the company's active endpoints share 25"] },
    });
    assert.equal(await slotRows(ctx, company), 25);
  });

  await t.step("raising one past the total is refused; lowering frees slot rows", async () => {
    const raise = await company.put(`${ENDPOINTS}/${a.body.data.id}`, { max_concurrency: 11 });
    assert.equal(raise.status, 422);
    assert.ok(raise.body.errors.max_concurrency);
    const lower = await company.put(`${ENDPOINTS}/${a.body.data.id}`, { max_concurrency: 2 });
    assert.equal(lower.status, 200);
    assert.equal(await slotRows(ctx, company), 17);
    const grow = await company.put(`${ENDPOINTS}/${b.body.data.id}`, { max_concurrency: 18 });
    assert.equal(grow.status, 200, JSON.stringify(grow.body));
    assert.equal(await slotRows(ctx, company), 25);
    // other settings of an endpoint change whatever the total
    const rename = await company.put(`${ENDPOINTS}/${b.body.data.id}`, { url: "https://example.com/moved" });
    assert.equal(rename.status, 200);
  });

  await t.step("a disabled endpoint holds no slot rows and gives its share back", async () => {
    assert.equal((await company.delete(`${ENDPOINTS}/${b.body.data.id}`)).status, 200);
    assert.equal(await slotRows(ctx, company), 7);
    assert.equal((await create(18)).status, 201);
    assert.equal(await slotRows(ctx, company), 25);
    // changing a disabled endpoint's max_concurrency needs no room: it holds nothing
    const idle = await company.put(`${ENDPOINTS}/${b.body.data.id}`, { max_concurrency: 100 });
    assert.equal(idle.status, 200);
    assert.equal(await slotRows(ctx, company), 25);
  });

  await ctx.close();
});

Deno.test("forty endpoints at max_concurrency 100 no longer make 4,080 slot rows", async () => {
  // the default limits: 50 active endpoints sharing 500
  const ctx = await setup("limits_slot_rows", {
    env: { WEBHOOK_ENDPOINTS_PER_COMPANY: "50", WEBHOOK_CONCURRENCY_PER_COMPANY: "500" },
  });
  const company = await newCompany(ctx);
  const statuses = [];
  for (let i = 0; i < 40; i++) {
    statuses.push((await company.post(ENDPOINTS, { url: `https://example.com/${i}`, max_concurrency: 100 })).status);
  }
  assert.deepEqual(statuses, [...Array(5).fill(201), ...Array(35).fill(422)]);
  assert.equal(await slotRows(ctx, company), 500);
  await ctx.close();
});
