/**
 * The sign-in throttle under attack (docs/limits.md, "Failed sign-ins"): failures count per username at one client
 * address, per address and of all addresses together, so guesses from one address slow that address down and never
 * lock the user out elsewhere; concurrent sign-ins of one user never deadlock; and a service that receives forwarding
 * headers without trusting a proxy says so once.
 */
import assert from "node:assert/strict";
import { createUser } from "../../domain/integrators/users.ts";
import { loadConfig } from "../../domain/infra/config.ts";
import { connect } from "../../domain/infra/db.ts";
import { reserveSignIn, settleSignIn } from "../../domain/integrators/sign_in_throttle.ts";
import { setup, TEST_JWT_SECRET, type TestContext } from "../support/helpers.ts";
import { startService } from "../support/service_process.ts";

/** Sign-in from `address`: the app trusts one proxy (TRUST_PROXY_HOPS=1), which wrote the address it saw last. */
function signInFrom(ctx: TestContext) {
  return async (address: string, username: string, password: string) => {
    const res = await ctx.app.request("/api/v1/sign_in", {
      method: "POST",
      headers: { "content-type": "application/json", "x-forwarded-for": address },
      body: JSON.stringify({ user: { username, password } }),
    });
    await res.body?.cancel();
    return { status: res.status, retryAfter: Number(res.headers.get("retry-after")) };
  };
}

async function userOf(ctx: TestContext, username: string): Promise<string> {
  const made = await createUser(ctx.sql, { companyId: crypto.randomUUID(), username });
  assert.ok("password" in made);
  return made.password;
}

const ATTACKER = "203.0.113.66";
const USER_AT_HOME = "192.0.2.10";

Deno.test("guesses from one address never lock a user out at another", async (t) => {
  const ctx = await setup("sign_in_elsewhere", { env: { TRUST_PROXY_HOPS: "1" } });
  const signIn = signInFrom(ctx);
  try {
    const password = await userOf(ctx, "ana@x.com");

    await t.step("10 wrong passwords with case and width variants: the attacker's address waits", async () => {
      const forms = ["Ana@x.com", "ANA@X.COM", "ａｎａ@ｘ.ｃｏｍ", " ana@x.com"];
      for (let i = 0; i < 10; i++) {
        assert.equal((await signIn(ATTACKER, forms[i % forms.length], `guess-${i}`)).status, 401);
      }
      const next = await signIn(ATTACKER, "ana@x.com", "guess-10");
      assert.equal(next.status, 429);
      assert.ok(next.retryAfter > 800 && next.retryAfter <= 900, `Retry-After ${next.retryAfter}`);
      // even the right password waits there: the throttle cannot tell before hashing, and must not hash
      assert.equal((await signIn(ATTACKER, "ana@x.com", password)).status, 429);
    });

    await t.step("the real user's correct password from another address answers 200", async () => {
      assert.equal((await signIn(USER_AT_HOME, "ana@x.com", password)).status, 200);
    });

    await t.step("renewing the attack changes nothing for the user elsewhere", async () => {
      for (let i = 0; i < 10; i++) assert.equal((await signIn(ATTACKER, "ANA@X.COM", `again-${i}`)).status, 429);
      assert.equal((await signIn(USER_AT_HOME, "Ana@X.com", password)).status, 200);
      // and the user's own typos count at the user's address only, and a success clears them
      for (let i = 0; i < 9; i++) assert.equal((await signIn(USER_AT_HOME, "ana@x.com", `typo-${i}`)).status, 401);
      assert.equal((await signIn(USER_AT_HOME, "ana@x.com", password)).status, 200);
      assert.equal((await signIn(USER_AT_HOME, "ana@x.com", "typo-again")).status, 401);
      assert.equal((await signIn(USER_AT_HOME, "ana@x.com", password)).status, 200);
    });
  } finally {
    await ctx.close();
  }
});

Deno.test("the per-address ceiling: one address trying many usernames waits; the users sign in elsewhere", async () => {
  const ctx = await setup("sign_in_address_ceiling", {
    env: { TRUST_PROXY_HOPS: "1", SIGN_IN_FAILURES_PER_ADDRESS: "5" },
  });
  const signIn = signInFrom(ctx);
  try {
    const password = await userOf(ctx, "bea@x.com");
    for (let i = 0; i < 5; i++) assert.equal((await signIn(ATTACKER, `user-${i}@x.com`, "guess")).status, 401);
    const sixth = await signIn(ATTACKER, "bea@x.com", password);
    assert.equal(sixth.status, 429, "a sixth username from the same address waits, whatever the password");
    assert.ok(sixth.retryAfter > 800 && sixth.retryAfter <= 900, `Retry-After ${sixth.retryAfter}`);
    assert.equal((await signIn(USER_AT_HOME, "bea@x.com", password)).status, 200);
  } finally {
    await ctx.close();
  }
});

Deno.test("the global ceiling: past it, an address that has failed waits, a fresh one is still tried", async () => {
  const ctx = await setup("sign_in_global_ceiling", {
    env: { TRUST_PROXY_HOPS: "1", SIGN_IN_FAILURES_GLOBAL: "6" },
  });
  const signIn = signInFrom(ctx);
  try {
    const password = await userOf(ctx, "caio@x.com");
    // one guess from each of six addresses, each far under its own counts
    for (let i = 1; i <= 5; i++) assert.equal((await signIn(`198.51.100.${i}`, "caio@x.com", "guess")).status, 401);
    assert.equal((await signIn("198.51.100.6", "someone@x.com", "guess")).status, 401);
    const again = await signIn("198.51.100.1", "another@x.com", "guess");
    assert.equal(again.status, 429, "an address that has failed waits once all addresses together failed 6 times");
    assert.ok(again.retryAfter > 800 && again.retryAfter <= 930, `Retry-After ${again.retryAfter}`);
    // the user at an address that has not failed is tried, and signs in
    assert.equal((await signIn(USER_AT_HOME, "caio@x.com", password)).status, 200);
    // a fresh address gets one try, then waits too
    assert.equal((await signIn("198.51.100.7", "caio@x.com", "guess")).status, 401);
    assert.equal((await signIn("198.51.100.7", "caio@x.com", "guess")).status, 429);
  } finally {
    await ctx.close();
  }
});

Deno.test("SIGN_IN_FAILURES_GLOBAL defaults to 1,000 and is read from the environment", () => {
  assert.equal(loadConfig({ JWT_SECRET: TEST_JWT_SECRET }).limits.signInFailuresGlobal, 1000);
  const set = loadConfig({ JWT_SECRET: TEST_JWT_SECRET, SIGN_IN_FAILURES_GLOBAL: "50" }).limits;
  assert.equal(set.signInFailuresGlobal, 50);
  assert.throws(() => loadConfig({ JWT_SECRET: TEST_JWT_SECRET, SIGN_IN_FAILURES_GLOBAL: "0" }), /GLOBAL/);
});

Deno.test("40 sign-ins of one user at once, again and again: each settles, none deadlocks", async () => {
  const ctx = await setup("sign_in_lock_order");
  // more connections than the app's, so reservations and settlements really run side by side
  const sql = connect(ctx.url, { max: 10 });
  const limits = { perUsername: 1000, perAddress: 1000, global: 1000, windowSeconds: 900 };
  try {
    // a wrong password for someone else from this address first: its row is older than the user's, as in service
    const other = await reserveSignIn(sql, limits, { username: "someone-else@x.com", address: "192.0.2.1" });
    assert.ok("reservedAt" in other);
    const attempt = { username: "dani@x.com", address: "192.0.2.1" };
    const failures: string[] = [];
    await Promise.all(Array.from({ length: 40 }, async (_, client) => {
      for (let round = 0; round < 10; round++) {
        try {
          const held = await reserveSignIn(sql, limits, attempt);
          assert.ok("reservedAt" in held, "room for every attempt");
          await new Promise((r) => setTimeout(r, Math.random() * 5)); // the hash
          await settleSignIn(sql, attempt, held, (client + round) % 4 ? "succeeded" : "not_tried");
        } catch (err) {
          failures.push((err as Error).message);
        }
      }
    }));
    assert.deepEqual(failures, [], `${failures.length} of 400 failed`);
    const [pair] = await sql`select times from sign_in_pair_failures where username = ${attempt.username}`;
    assert.deepEqual(pair.times, [], "every reservation was settled");
  } finally {
    await sql.end();
    await ctx.close();
  }
});

Deno.test("40 correct sign-ins of one user at once through the API: 200, 429 or 503, never 500", async () => {
  // room for all 40 in the counts: the hash pool turns some away (503, or 429 for one address's share), and their
  // reservations are given back while the others' are being made
  const ctx = await setup("sign_in_flood_one_user", {
    env: { SIGN_IN_FAILURES_PER_USERNAME: "1000", SIGN_IN_FAILURES_PER_ADDRESS: "1000" },
  });
  try {
    const password = await userOf(ctx, "eli@x.com");
    const signIn = signInFrom(ctx);
    for (let flood = 0; flood < 3; flood++) {
      const answers = await Promise.all(Array.from({ length: 40 }, () => signIn("192.0.2.1", "eli@x.com", password)));
      const statuses = answers.map((a) => a.status);
      assert.deepEqual(statuses.filter((s) => ![200, 429, 503].includes(s)), [], JSON.stringify(statuses));
      assert.ok(statuses.includes(200), JSON.stringify(statuses));
      assert.ok(answers.every((a) => a.status === 200 || a.retryAfter >= 1), "every refusal says when to come back");
    }
  } finally {
    await ctx.close();
  }
});

Deno.test("X-Forwarded-For with TRUST_PROXY_HOPS=0: the running service warns once, naming TRUST_PROXY_HOPS", async () => {
  const ctx = await setup("sign_in_untrusted_forwarding");
  const service = await startService(ctx.url, { LOG_LEVEL: "warn" }, { logs: true });
  const get = (headers: Record<string, string> = {}) =>
    fetch(`${service.base}/healthz`, { headers }).then((r) => r.body?.cancel());
  const warned = () => service.logs().filter((l) => l.level === "warn" && String(l.msg).includes("TRUST_PROXY_HOPS"));
  const written = () => new Promise((r) => setTimeout(r, 200)); // log lines are written at the end of a tick
  try {
    await get();
    await written();
    assert.equal(warned().length, 0, "no warning before a forwarding header arrives");
    for (let i = 0; i < 3; i++) await get({ "x-forwarded-for": `192.0.2.${i}` });
    await get({ forwarded: "for=192.0.2.9" });
    await written();
    assert.equal(warned().length, 1, "once, not per request");
    assert.equal(warned()[0].header, "x-forwarded-for");
  } finally {
    await service.stop();
    await ctx.close();
  }
});
