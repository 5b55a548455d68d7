/**
 * Bearer tokens and tenancy: which tokens `requireCompany` accepts (algorithm, audience, lifetime, clock skew, expiry
 * after a first acceptance), and that another company's data answers 404.
 */
import assert from "node:assert/strict";
import { sign } from "hono/jwt";
import { signToken } from "../../domain/integrators/tokens.ts";
import { newCompany, setup, TEST_JWT_SECRET, TEST_TOKENS } from "../support/helpers.ts";

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
  const iss = "payments-api";
  const aud = "payments-api";
  const claims = { sub, iss, aud, iat: now, exp: now + 60 };
  const signed = (payload: Record<string, unknown>, secret = TEST_JWT_SECRET) =>
    sign(payload, secret, "HS256").then((token) => `Bearer ${token}`);
  const without = (key: string) => Object.fromEntries(Object.entries(claims).filter(([k]) => k !== key));

  await t.step("a valid HS256 token is accepted", async () => {
    assert.deepEqual(await call(await signed(claims)), { status: 200, body: { data: [] } });
  });

  await t.step("the token `deno task token` signs is accepted", async () => {
    assert.equal((await call(`Bearer ${await signToken(TEST_TOKENS, sub)}`)).status, 200);
  });

  await t.step("the scheme is case-insensitive (RFC 7235, section 2.1): bearer and BEARER are accepted", async () => {
    const token = await sign(claims, TEST_JWT_SECRET, "HS256");
    for (const scheme of ["bearer", "BEARER"]) {
      assert.deepEqual(await call(`${scheme} ${token}`), { status: 200, body: { data: [] } }, scheme);
    }
  });

  await t.step("aud may be a list that names this service", async () => {
    assert.equal((await call(await signed({ ...claims, aud: ["another-api", aud] }))).status, 200);
  });

  await t.step("a token lasting exactly the maximum lifetime is accepted", async () => {
    const token = await signed({ ...claims, exp: now + TEST_TOKENS.jwtMaxTtlSeconds });
    assert.equal((await call(token)).status, 200);
  });

  const refused: [string, () => Promise<string | undefined>][] = [
    ["no header", () => Promise.resolve(undefined)],
    ["another scheme", async () => (await signed(claims)).replace("Bearer", "Basic")],
    ["a bare token", () => sign(claims, TEST_JWT_SECRET, "HS256")],
    ["a bad signature", () => signed(claims, "another-secret-of-at-least-32-bytes-long")],
    // the development secret that used to be published in the source, and was used whenever JWT_SECRET was unset
    ["the old published development secret", () => signed(claims, "dev-only-secret-change-me")],
    ["alg none", () => Promise.resolve(`Bearer ${b64url({ alg: "none", typ: "JWT" })}.${b64url(claims)}.`)],
    ["alg HS512", async () => `Bearer ${await sign(claims, TEST_JWT_SECRET, "HS512")}`],
    // expired longer ago than the clock-skew leeway (60 s)
    ["an expired token", () => signed({ ...claims, iat: now - 300, exp: now - 61 })],
    ["no exp", () => signed(without("exp"))],
    ["no iat", () => signed(without("iat"))],
    ["a lifetime over JWT_MAX_TTL_SECONDS", () => signed({ ...claims, exp: now + TEST_TOKENS.jwtMaxTtlSeconds + 1 })],
    ["a lifetime of ten years", () => signed({ ...claims, exp: now + 10 * 365 * 86400 })],
    ["iat in the future", () => signed({ ...claims, iat: now + 3600, exp: now + 7200 })],
    ["iat more than the leeway ahead", () => signed({ ...claims, iat: now + 62, exp: now + 3600 })],
    ["nbf more than the leeway ahead", () => signed({ ...claims, nbf: now + 62 })],
    ["a jti that is not a session id", () => signed({ ...claims, jti: "my-session" })],
    ["no iss", () => signed(without("iss"))],
    ["another iss", () => signed({ ...claims, iss: "someone-else" })],
    ["no aud", () => signed(without("aud"))],
    ["another aud", () => signed({ ...claims, aud: "another-api" })],
    ["a non-UUID sub", () => signed({ ...claims, sub: "company-1" })],
    ["no sub", () => signed(without("sub"))],
    ["garbage", () => Promise.resolve("Bearer not.a.jwt")],
  ];
  for (const [name, header] of refused) {
    await t.step(`${name} → 401`, async () => {
      assert.deepEqual(await call(await header()), { status: 401, body: UNAUTHORIZED });
    });
  }

  await t.step("clocks that differ by up to a minute agree: iat, nbf and exp have 60 s of leeway", async () => {
    // signed by an instance whose clock runs 2 s (then 59 s) ahead of this one
    assert.equal((await call(await signed({ ...claims, iat: now + 2, exp: now + 3600 }))).status, 200);
    assert.equal((await call(await signed({ ...claims, iat: now + 59, exp: now + 3600, nbf: now + 59 }))).status, 200);
    // expired 30 s ago by this clock, not by the signer's
    assert.equal((await call(await signed({ ...claims, iat: now - 600, exp: now - 30 }))).status, 200);
  });

  await t.step("a token accepted once is refused after it expires (the verified-token cache checks exp)", async () => {
    // expired 58 s ago: accepted within the 60 s leeway, refused once the leeway has passed too
    const at = Math.floor(Date.now() / 1000);
    const token = await signed({ ...claims, iat: at - 100, exp: at - 58 });
    assert.equal((await call(token)).status, 200);
    await new Promise((r) => setTimeout(r, (at + 2) * 1000 - Date.now() + 50));
    assert.deepEqual(await call(token), { status: 401, body: UNAUTHORIZED });
  });

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
