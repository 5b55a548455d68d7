/**
 * Sessions of sign-in tokens: sign-out, a new password, a deleted or disabled user and `deno task token:revoke` end
 * tokens at once, and only the ones they should.
 */
import assert from "node:assert/strict";
import { decode } from "hono/jwt";
import { createUser, resetPassword } from "../../domain/integrators/users.ts";
import { signToken } from "../../domain/integrators/tokens.ts";
import { eventually, setup, TEST_TOKENS, type TestContext } from "../support/helpers.ts";
import { runTask } from "../support/service_process.ts";

/** A user of a new company, and a way to sign it in and to call the API with a token. */
async function userOf(ctx: TestContext, username: string) {
  const companyId = crypto.randomUUID();
  const made = await createUser(ctx.sql, { companyId, username });
  assert.ok("password" in made);
  let password = made.password;
  const signIn = async (pass = password) => {
    const res = await ctx.app.request("/api/v1/sign_in", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ user: { username, password: pass } }),
    });
    const body = await res.json();
    return { status: res.status, jwt: body.jwt as string };
  };
  const call = async (token: string, method = "GET", path = "/api/v1/subject/people") => {
    const res = await ctx.app.request(path, { method, headers: { authorization: `Bearer ${token}` } });
    return { status: res.status, body: res.status === 204 ? null : await res.json() };
  };
  return {
    companyId,
    userId: made.user.id,
    signIn,
    call,
    setPassword: (p: string) => password = p,
    get password() {
      return password;
    },
  };
}

const UNAUTHORIZED = { status: 401, body: { errors: { detail: "Unauthorized" } } };

/**
 * Waits (up to a second) for `token` to be refused: a change made by another process reaches the service as a
 * notification, milliseconds after its commit.
 */
async function refusedSoon(call: (token: string) => Promise<{ status: number }>, token: string) {
  await eventually("the token to be refused", async () => (await call(token)).status === 401, 1000, 5);
}

Deno.test("sessions: every token from sign-in can be ended, and ends at once", async (t) => {
  const ctx = await setup("sessions");
  try {
    await t.step("a token from sign-in names its session", async () => {
      const ana = await userOf(ctx, "ana.sessions");
      const { jwt } = await ana.signIn();
      const { payload } = decode(jwt);
      const [row] = await ctx.sql`select company_id, user_id from sessions where id = ${String(payload.jti)}`;
      assert.deepEqual({ ...row }, { company_id: ana.companyId, user_id: ana.userId });
    });

    await t.step("sign_out ends the token that calls it and no other", async () => {
      const bia = await userOf(ctx, "bia.sessions");
      const laptop = (await bia.signIn()).jwt;
      const phone = (await bia.signIn()).jwt;
      assert.equal((await bia.call(laptop)).status, 200);
      assert.deepEqual(await bia.call(laptop, "POST", "/api/v1/sign_out"), { status: 204, body: null });
      assert.deepEqual(await bia.call(laptop), UNAUTHORIZED);
      assert.deepEqual(await bia.call(laptop, "POST", "/api/v1/sign_out"), UNAUTHORIZED);
      assert.equal((await bia.call(phone)).status, 200, "the other session goes on");
    });

    await t.step("a token not from sign-in cannot sign out: 422 says how to revoke it", async () => {
      const token = await signToken(TEST_TOKENS, crypto.randomUUID());
      const res = await ctx.app.request("/api/v1/sign_out", {
        method: "POST",
        headers: { authorization: `Bearer ${token}` },
      });
      assert.equal(res.status, 422);
      assert.match((await res.json()).errors.detail, /deno task token:revoke/);
    });

    await t.step("a new password ends every session of the user", async () => {
      const caio = await userOf(ctx, "caio.sessions");
      const tokens = [(await caio.signIn()).jwt, (await caio.signIn()).jwt];
      for (const token of tokens) assert.equal((await caio.call(token)).status, 200);
      const reset = await resetPassword(ctx.sql, "CAIO.sessions");
      assert.ok(reset);
      // reset elsewhere (deno task user:password): the service learns it by notification, milliseconds later
      for (const token of tokens) await refusedSoon(caio.call, token);
      assert.equal((await caio.signIn(reset.password)).status, 200);
    });

    await t.step("deleting the user ends its tokens", async () => {
      const duda = await userOf(ctx, "duda.sessions");
      const { jwt } = await duda.signIn();
      assert.equal((await duda.call(jwt)).status, 200);
      await ctx.sql`delete from users where id = ${duda.userId}`;
      await refusedSoon(duda.call, jwt);
    });

    await t.step("a session past its expiry is refused even if the token were longer-lived", async () => {
      const enzo = await userOf(ctx, "enzo.sessions");
      const { jwt } = await enzo.signIn();
      const { payload } = decode(jwt);
      await ctx.sql`update sessions set expires_at = now() - interval '1 second' where id = ${String(payload.jti)}`;
      // the row changed behind the service's back, as an operator would: no notification, so a fresh check
      assert.deepEqual(await (await userOf(ctx, "enzo.other")).call(jwt), UNAUTHORIZED);
    });
  } finally {
    await ctx.close();
  }
});

Deno.test("user:disable and token:revoke, as an operator runs them", async (t) => {
  const ctx = await setup("sessions_commands");
  try {
    await t.step(
      "user:disable ends the user's tokens and refuses its password; --enable lets it in again",
      async () => {
        const fia = await userOf(ctx, "fia.commands");
        const { jwt } = await fia.signIn();
        assert.equal((await fia.call(jwt)).status, 200);
        const out = await runTask(ctx.url, ["user:disable", "--username", "fia.commands"]);
        assert.equal(out.code, 0, out.stderr);
        await refusedSoon(fia.call, jwt);
        assert.equal((await fia.signIn()).status, 401, "the right password, refused like a wrong one");
        const enabled = await runTask(ctx.url, ["user:disable", "--username", "fia.commands", "--enable"]);
        assert.equal(enabled.code, 0, enabled.stderr);
        assert.equal((await fia.signIn()).status, 200);
        assert.deepEqual(await fia.call(jwt), UNAUTHORIZED, "the old token stays ended");
        const unknown = await runTask(ctx.url, ["user:disable", "--username", "nobody.commands"]);
        assert.equal(unknown.code, 1);
      },
    );

    await t.step("token:revoke ends every token of the company, from deno task token and from sign-in", async () => {
      const gil = await userOf(ctx, "gil.commands");
      const made = await runTask(ctx.url, ["token", gil.companyId]);
      assert.equal(made.code, 0, made.stderr);
      const cliToken = made.lines.at(-1)!;
      const signedIn = (await gil.signIn()).jwt;
      const neighbour = await signToken(TEST_TOKENS, crypto.randomUUID());
      for (const token of [cliToken, signedIn, neighbour]) assert.equal((await gil.call(token)).status, 200);
      const out = await runTask(ctx.url, ["token:revoke", gil.companyId]);
      assert.equal(out.code, 0, out.stderr);
      await refusedSoon(gil.call, cliToken);
      assert.deepEqual(await gil.call(signedIn), UNAUTHORIZED);
      assert.equal((await gil.call(neighbour)).status, 200, "another company is untouched");
      // tokens issued from the next second on work
      await new Promise((r) => setTimeout(r, 1100 - (Date.now() % 1000)));
      assert.equal((await gil.call(await signToken(TEST_TOKENS, gil.companyId))).status, 200);
      assert.equal((await gil.call((await gil.signIn()).jwt)).status, 200);
    });
  } finally {
    await ctx.close();
  }
});
