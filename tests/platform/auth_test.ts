import assert from "node:assert/strict";
import { sign } from "hono/jwt";
import { newCompany, setup, TEST_JWT_SECRET } from "../helpers.ts";

const UNAUTHORIZED = { errors: { detail: "Unauthorized" } };
const b64url = (obj: unknown) => btoa(JSON.stringify(obj)).replace(/=+$/, "").replace(/\+/g, "-").replace(/\//g, "_");

Deno.test("authentication and tenancy", async (t) => {
  const ctx = await setup("auth");
  const call = async (authorization?: string) => {
    const res = await ctx.app.request("/api/v1/subject/people", {
      headers: authorization ? { authorization } : {},
    });
    return { status: res.status, body: await res.json() };
  };
  const now = Math.floor(Date.now() / 1000);
  const sub = crypto.randomUUID();

  await t.step("a valid HS256 token is accepted", async () => {
    const token = await sign({ sub, exp: now + 60 }, TEST_JWT_SECRET, "HS256");
    assert.deepEqual(await call(`Bearer ${token}`), { status: 200, body: { data: [] } });
  });

  await t.step("a token without exp is accepted", async () => {
    const token = await sign({ sub }, TEST_JWT_SECRET, "HS256");
    assert.equal((await call(`Bearer ${token}`)).status, 200);
  });

  const refused: [string, () => Promise<string | undefined>][] = [
    ["no header", () => Promise.resolve(undefined)],
    ["another scheme", async () => `Basic ${await sign({ sub }, TEST_JWT_SECRET, "HS256")}`],
    ["a bare token", () => sign({ sub }, TEST_JWT_SECRET, "HS256")],
    ["a bad signature", async () => `Bearer ${await sign({ sub }, "another-secret", "HS256")}`],
    ["alg none", () => Promise.resolve(`Bearer ${b64url({ alg: "none", typ: "JWT" })}.${b64url({ sub })}.`)],
    ["alg HS512", async () => `Bearer ${await sign({ sub }, TEST_JWT_SECRET, "HS512")}`],
    ["an expired token", async () => `Bearer ${await sign({ sub, exp: now - 10 }, TEST_JWT_SECRET, "HS256")}`],
    ["a non-UUID sub", async () => `Bearer ${await sign({ sub: "company-1" }, TEST_JWT_SECRET, "HS256")}`],
    ["no sub", async () => `Bearer ${await sign({ exp: now + 60 }, TEST_JWT_SECRET, "HS256")}`],
    ["garbage", () => Promise.resolve("Bearer not.a.jwt")],
  ];
  for (const [name, header] of refused) {
    await t.step(`${name} → 401`, async () => {
      assert.deepEqual(await call(await header()), { status: 401, body: UNAUTHORIZED });
    });
  }

  await t.step("another company's person answers 404 and is never listed", async () => {
    const alice = await newCompany(ctx);
    const bob = await newCompany(ctx);
    const created = await alice.post("/api/v1/subject/people", {
      person: { document_number: "52998224725", document_type: "cpf", social_name: "Ana", fiscal_country: "BRA" },
    });
    assert.equal(created.status, 201);
    const id = created.body.data.id;
    const notFound = { errors: { detail: "Not Found" } };
    assert.deepEqual(await bob.get(`/api/v1/subject/people/${id}`).then((r) => [r.status, r.body]), [404, notFound]);
    const put = await bob.put(`/api/v1/subject/people/${id}`, { person: { social_name: "Mallory" } });
    assert.deepEqual([put.status, put.body], [404, notFound]);
    assert.deepEqual((await bob.get("/api/v1/subject/people")).body, { data: [] });
    // the same document registered by bob is bob's own person, not alice's
    const bobs = await bob.post("/api/v1/subject/people", {
      person: { document_number: "52998224725", document_type: "cpf", social_name: "Ana B", fiscal_country: "BRA" },
    });
    assert.equal(bobs.status, 201);
    assert.notEqual(bobs.body.data.id, id);
    assert.equal((await alice.get(`/api/v1/subject/people/${id}`)).body.data.social_name, "Ana");
  });

  await t.step("health, unknown routes and request ids", async () => {
    const health = await ctx.app.request("/healthz");
    assert.deepEqual([health.status, await health.json()], [200, { status: "ok" }]);
    assert.match(health.headers.get("x-request-id") ?? "", /^[0-9a-f-]{36}$/);

    const echoed = await ctx.app.request("/healthz", { headers: { "x-request-id": "abc-123" } });
    assert.equal(echoed.headers.get("x-request-id"), "abc-123");

    const company = await newCompany(ctx);
    const unknown = await company.get("/api/v1/nothing-here");
    assert.deepEqual([unknown.status, unknown.body], [404, { errors: { detail: "Not Found" } }]);
    assert.ok(unknown.headers.get("x-request-id"));
    const root = await ctx.app.request("/nothing");
    assert.deepEqual([root.status, await root.json()], [404, { errors: { detail: "Not Found" } }]);
  });

  await ctx.close();
});
