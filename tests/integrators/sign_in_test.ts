/**
 * Signing in with a username and password (routes/integrators/sign_in.ts): the answer and its token, the failures that
 * answer alike, the throttle, and the user commands an operator runs before it.
 */
import assert from "node:assert/strict";
import { decode } from "hono/jwt";
import { createUser } from "../../domain/integrators/users.ts";
import { setup } from "../support/helpers.ts";
import { runTask, startService } from "../support/service_process.ts";

const UNAUTHORIZED = { errors: { detail: "Unauthorized" } };
Deno.test("signing in with a username and password", async (t) => {
  const ctx = await setup("sign_in");
  const signIn = async (body: unknown, headers: Record<string, string> = {}) => {
    const res = await ctx.app.request("/api/v1/sign_in", {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: typeof body === "string" ? body : JSON.stringify(body),
    });
    return { status: res.status, body: await res.json(), headers: res.headers };
  };
  const companyId = crypto.randomUUID();
  const made = await createUser(ctx.sql, { companyId, username: "ana@acme.example", name: "Ana Lima" });
  assert.ok("password" in made);
  const { password } = made;

  try {
    await t.step("the connector's body answers username, name and a 24-hour jwt at the top level", async () => {
      const res = await signIn(`{"user":{"username":"ana@acme.example","password":"${password}"}}`);
      assert.equal(res.status, 200);
      assert.deepEqual(Object.keys(res.body).sort(), ["jwt", "name", "username"]);
      assert.equal(res.body.username, "ana@acme.example");
      assert.equal(res.body.name, "Ana Lima");
      assert.equal(res.headers.get("cache-control"), "no-store");
      const { payload } = decode(res.body.jwt);
      assert.equal(payload.sub, companyId);
      assert.equal(Number(payload.exp) - Number(payload.iat), 86_400);
    });

    await t.step("the jwt is a bearer for the user's company", async () => {
      const { body } = await signIn({ user: { username: "ana@acme.example", password } });
      const res = await ctx.app.request("/api/v1/subject/people", { headers: { authorization: `Bearer ${body.jwt}` } });
      assert.equal(res.status, 200);
      const [row] = await ctx.sql`select id from companies where id = ${companyId}`;
      assert.ok(row, "the company exists");
    });

    await t.step("usernames match without regard to case", async () => {
      assert.equal((await signIn({ user: { username: "ANA@Acme.Example", password } })).status, 200);
    });

    await t.step("a wrong password and an unknown username answer the same", async () => {
      const wrong = await signIn({ user: { username: "ana@acme.example", password: password + "x" } });
      const unknown = await signIn({ user: { username: "nobody@acme.example", password } });
      assert.deepEqual([wrong.status, wrong.body], [401, UNAUTHORIZED]);
      assert.deepEqual([unknown.status, unknown.body], [401, UNAUTHORIZED]);
      const shown = (h: Headers) => [...h.keys()].filter((k) => k !== "x-request-id").sort();
      assert.deepEqual(shown(wrong.headers), shown(unknown.headers));
    });

    await t.step("a malformed body names the field; no bearer is asked for", async () => {
      const res = await signIn({ user: { username: "ana@acme.example" } });
      assert.equal(res.status, 400); // a missing field is a 400 (docs/errors.md)
      assert.deepEqual(res.body, { errors: { password: ["can't be blank"] } });
      assert.equal((await signIn("{not json")).status, 400);
    });

    await t.step("an Idempotency-Key never replays a token", async () => {
      const key = { "idempotency-key": "sign-in-1" };
      const first = await signIn({ user: { username: "ana@acme.example", password } }, key);
      const second = await signIn({ user: { username: "ana@acme.example", password } }, key);
      assert.equal(second.status, 200);
      assert.equal(second.headers.get("idempotent-replayed"), null);
      assert.equal(first.status, 200);
    });

    await t.step("more than 10 failures for one username in 15 minutes answer 429 with Retry-After", async () => {
      const other = await createUser(ctx.sql, { companyId, username: "bruno" });
      assert.ok("password" in other);
      for (let i = 0; i < 10; i++) {
        assert.equal((await signIn({ user: { username: "bruno", password: "guess" + i } })).status, 401);
      }
      const throttled = await signIn({ user: { username: "Bruno", password: other.password } });
      assert.equal(throttled.status, 429);
      const wait = Number(throttled.headers.get("retry-after"));
      assert.ok(wait > 800 && wait <= 900, `Retry-After ${wait} is the rest of the 15-minute window`);
      // another username is not held back by bruno's failures
      assert.equal((await signIn({ user: { username: "ana@acme.example", password } })).status, 200);
    });
  } finally {
    await ctx.close();
  }
});

Deno.test("user:create and user:password, then sign-in on the running service; no password in any log line", async (t) => {
  const ctx = await setup("sign_in_commands");
  const companyId = crypto.randomUUID();
  let password = "";
  const service = await startService(ctx.url, { LOG_LEVEL: "debug" }, { logs: true });
  const signIn = (username: string, pass: string) =>
    fetch(`${service.base}/api/v1/sign_in`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ user: { username, password: pass } }),
    }).then(async (r) => ({ status: r.status, text: await r.text() }));
  try {
    await t.step("user:create prints the generated password alone on the last line", async () => {
      const out = await runTask(ctx.url, [
        "user:create",
        "--company",
        companyId,
        "--username",
        "carla",
        "--name",
        "Carla",
      ]);
      assert.equal(out.code, 0, out.stderr);
      password = out.lines.at(-1)!;
      assert.match(password, /^[A-Za-z0-9_-]{32}$/);
      const [row] = await ctx.sql`select password_hash from users where username = 'carla'`;
      assert.ok(!row.password_hash.includes(password), "only a hash is stored");
      assert.match(row.password_hash, /^scrypt\$/);
    });

    await t.step("the same username again is refused", async () => {
      const out = await runTask(ctx.url, ["user:create", "--company", companyId, "--username", "CARLA"]);
      assert.equal(out.code, 1);
      assert.match(out.stderr, /taken/);
    });

    await t.step("the password signs in; a response never carries it", async () => {
      const res = await signIn("carla", password);
      assert.equal(res.status, 200);
      assert.ok(!res.text.includes(password));
    });

    await t.step("user:password replaces it: the old one fails, the new one works", async () => {
      const out = await runTask(ctx.url, ["user:password", "--username", "carla"]);
      assert.equal(out.code, 0, out.stderr);
      const fresh = out.lines.at(-1)!;
      assert.notEqual(fresh, password);
      assert.equal((await signIn("carla", password)).status, 401);
      assert.equal((await signIn("carla", fresh)).status, 200);
      password = fresh;
    });

    await t.step("no log line holds a password, right or wrong", async () => {
      await signIn("carla", "wrong-password-in-clear");
      await new Promise((r) => setTimeout(r, 200));
      const text = JSON.stringify(service.logs());
      assert.ok(text.includes("/api/v1/sign_in"), "the sign-in requests were logged");
      assert.ok(!text.includes(password));
      assert.ok(!text.includes("wrong-password-in-clear"));
    });
  } finally {
    await service.stop();
    await ctx.close();
  }
});

/** POST /api/v1/sign_in on `app` with extra headers; status, body and headers. */
function signInOn(app: { request: (path: string, init: RequestInit) => Response | Promise<Response> }) {
  return async (username: string, password: string, headers: Record<string, string> = {}) => {
    const res = await app.request("/api/v1/sign_in", {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify({ user: { username, password } }),
    });
    return { status: res.status, body: await res.json(), retryAfter: res.headers.get("retry-after") };
  };
}

Deno.test("the sign-in throttle: its settings, one form of a username, the client behind trusted proxies", async (t) => {
  await t.step("SIGN_IN_FAILURES_PER_USERNAME is honoured", async () => {
    const ctx = await setup("sign_in_per_username", { env: { SIGN_IN_FAILURES_PER_USERNAME: "3" } });
    try {
      const made = await createUser(ctx.sql, { companyId: crypto.randomUUID(), username: "dora" });
      assert.ok("password" in made);
      const signIn = signInOn(ctx.app);
      for (let i = 0; i < 3; i++) assert.equal((await signIn("dora", `guess-${i}`)).status, 401);
      const fourth = await signIn("dora", made.password);
      assert.equal(fourth.status, 429, "the right password waits too once the count is reached");
      assert.ok(Number(fourth.retryAfter) > 890);
    } finally {
      await ctx.close();
    }
  });

  await t.step("a username counts once however it is written; a look-alike is another, unknown, user", async () => {
    const ctx = await setup("sign_in_username_forms");
    try {
      const made = await createUser(ctx.sql, { companyId: crypto.randomUUID(), username: "mario.rossi@acme.io" });
      assert.ok("password" in made);
      const signIn = signInOn(ctx.app);
      // full-width letters are the same username once NFKC-normalised, and case never counts
      assert.equal((await signIn("ｍａｒｉｏ.ＲＯＳＳＩ@acme.io", made.password)).status, 200);
      // a dotted capital I folds to "i" plus a combining dot: not mario's username, so it can never guess his
      // password, whatever Postgres' lower() would have made of it
      assert.equal((await signIn("marİo.rossİ@acme.İo", made.password)).status, 401);
      const forms = ["MARIO.ROSSI@ACME.IO", "Mario.Rossi@Acme.Io", "ｍａｒｉｏ.rossi@acme.io", " mario.rossi@acme.io "];
      for (let i = 0; i < 10; i++) assert.equal((await signIn(forms[i % forms.length], `guess-${i}`)).status, 401);
      for (const form of [...forms, "mario.rossi@acme.io"]) {
        assert.equal((await signIn(form, made.password)).status, 429, `${form} is throttled as one username`);
      }
    } finally {
      await ctx.close();
    }
  });

  await t.step(
    "without a trusted proxy, a client's X-Forwarded-For is ignored: it cannot pick its address",
    async () => {
      const ctx = await setup("sign_in_no_proxy", { env: { SIGN_IN_FAILURES_PER_ADDRESS: "3" } });
      try {
        const signIn = signInOn(ctx.app);
        for (let i = 0; i < 3; i++) {
          const spoofed = { "x-forwarded-for": `198.51.100.${i}` };
          assert.equal((await signIn(`nobody-${i}`, "guess", spoofed)).status, 401);
        }
        const next = await signIn("nobody-else", "guess", { "x-forwarded-for": "198.51.100.77" });
        assert.equal(next.status, 429);
      } finally {
        await ctx.close();
      }
    },
  );

  await t.step("behind TRUST_PROXY_HOPS=1, each client is counted by the address the proxy saw", async () => {
    const ctx = await setup("sign_in_proxy", {
      env: { SIGN_IN_FAILURES_PER_ADDRESS: "3", TRUST_PROXY_HOPS: "1" },
    });
    try {
      const made = await createUser(ctx.sql, { companyId: crypto.randomUUID(), username: "eva" });
      assert.ok("password" in made);
      const signIn = signInOn(ctx.app);
      // the attacker writes its own X-Forwarded-For; the proxy appends the address it really came from
      const attacker = (forged: string) => ({ "x-forwarded-for": `${forged}, 203.0.113.66` });
      for (let i = 0; i < 3; i++) {
        assert.equal((await signIn(`victim-${i}`, "guess", attacker(`10.0.0.${i}`))).status, 401);
      }
      assert.equal((await signIn("victim-9", "guess", attacker("10.0.0.9"))).status, 429);
      // everyone else behind the same proxy signs in as before
      const other = await signIn("eva", made.password, { "x-forwarded-for": "192.0.2.10" });
      assert.equal(other.status, 200);
    } finally {
      await ctx.close();
    }
  });

  await t.step("the hash pool: sign-ins past its queue answer 503 with Retry-After, and are not counted", async () => {
    const ctx = await setup("sign_in_pool", {
      env: {
        SIGN_IN_HASH_CONCURRENCY: "1",
        SIGN_IN_HASH_QUEUE: "1",
        SIGN_IN_FAILURES_PER_ADDRESS: "1000",
        // every request here comes from one address: no share of its own (tests/integrators/hash_pool_test.ts)
        SIGN_IN_HASH_PER_ADDRESS: "1000",
      },
    });
    try {
      const made = await createUser(ctx.sql, { companyId: crypto.randomUUID(), username: "fabio" });
      assert.ok("password" in made);
      const signIn = signInOn(ctx.app);
      const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => signIn(`unknown-${i}`, "guess")));
      const statuses = answers.map((a) => a.status).sort();
      assert.deepEqual(statuses, [401, 401, 503, 503, 503, 503, 503, 503]);
      assert.ok(answers.filter((a) => a.status === 503).every((a) => a.retryAfter === "1"));
      // a turned-away attempt took no place in any count: fabio's 10 places are all there
      const busy = await Promise.all(Array.from({ length: 4 }, () => signIn("fabio", "wrong")));
      const turnedAway = busy.filter((a) => a.status === 503).length;
      assert.ok(turnedAway >= 2, `${turnedAway} turned away`);
      for (let i = 0; i < 10 - (4 - turnedAway); i++) assert.equal((await signIn("fabio", `g${i}`)).status, 401);
      assert.equal((await signIn("fabio", made.password)).status, 429);
    } finally {
      await ctx.close();
    }
  });
});
