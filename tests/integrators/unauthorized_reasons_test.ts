/**
 * 401s that say why, over HTTP against the real service (`main.ts` as a process, its log read from stdout): a missing
 * token, a malformed header, a bad signature, an expired or a revoked token each answer the same body, with a
 * `WWW-Authenticate` challenge (RFC 6750) and a log line that name the reason. Apart from auth_test.ts, which checks
 * which tokens are refused, because this one reads the process's own log.
 */
import assert from "node:assert/strict";
import { sign } from "hono/jwt";
import { signToken } from "../../domain/integrators/tokens.ts";
import { createUser } from "../../domain/integrators/users.ts";
import { eventually, setup, TEST_JWT_SECRET, TEST_TOKENS } from "../support/helpers.ts";
import { startService } from "../support/service_process.ts";

const UNAUTHORIZED = { errors: { detail: "Unauthorized" } };

Deno.test("a refused token hears why in WWW-Authenticate, the log says the same, the body stays Unauthorized", async (t) => {
  const ctx = await setup("unauthorized_reasons");
  const service = await startService(ctx.url, { LOG_LEVEL: "info" }, { logs: true });
  const call = async (authorization?: string, method = "GET", path = "/api/v1/subject/people") => {
    const requestId = crypto.randomUUID();
    const res = await fetch(`${service.base}${path}`, {
      method,
      headers: { "x-request-id": requestId, ...(authorization === undefined ? {} : { authorization }) },
    });
    const text = await res.text();
    return {
      status: res.status,
      body: text ? JSON.parse(text) : null,
      challenge: res.headers.get("www-authenticate"),
      requestId,
    };
  };
  const logLineOf = (requestId: string) =>
    eventually(
      `the log line of ${requestId}`,
      () => service.logs().find((line) => line.msg === "request" && line.request_id === requestId),
      5000,
    );
  const now = Math.floor(Date.now() / 1000);
  const companyId = crypto.randomUUID();
  const good = await signToken(TEST_TOKENS, companyId);

  /** The 401 of `authorization`: its body, its challenge and its log line's reason. */
  const refusedWith = async (authorization: string | undefined, challenge: string, logged: string) => {
    const res = await call(authorization);
    assert.deepEqual([res.status, res.body], [401, UNAUTHORIZED]);
    assert.equal(res.challenge, challenge);
    const line = await logLineOf(res.requestId);
    assert.deepEqual([line.status, line.auth_failure], [401, logged]);
  };
  const invalid = (description: string) => `Bearer error="invalid_token", error_description="${description}"`;

  try {
    await t.step("no token: the scheme alone, as RFC 6750 has it for a client that did not try Bearer", async () => {
      await refusedWith(undefined, "Bearer", "missing");
    });

    await t.step("an empty bearer is malformed", async () => {
      await refusedWith("Bearer ", invalid("malformed: nothing after Bearer"), "malformed: nothing after Bearer");
    });

    await t.step("Bearer twice is malformed", async () => {
      const description = "malformed: expected one token after Bearer";
      await refusedWith(`Bearer Bearer ${good}`, invalid(description), description);
    });

    await t.step("three parts that are not a JWT hear which part is wrong: here, the header", async () => {
      const description = "malformed: the JWT header (first part) is not base64url-encoded JSON";
      await refusedWith("Bearer abc.def.ghi", invalid(description), description);
    });

    await t.step("a token signed with another secret has a bad signature", async () => {
      const forged = await sign(
        { sub: companyId, iss: TEST_TOKENS.jwtIssuer, aud: TEST_TOKENS.jwtAudience, iat: now, exp: now + 60 },
        "another-secret-of-at-least-32-bytes-long",
        "HS256",
      );
      await refusedWith(`Bearer ${forged}`, invalid("bad signature"), "bad signature");
    });

    await t.step("an expired token is expired", async () => {
      const expired = await sign(
        { sub: companyId, iss: TEST_TOKENS.jwtIssuer, aud: TEST_TOKENS.jwtAudience, iat: now - 600, exp: now - 300 },
        TEST_JWT_SECRET,
        "HS256",
      );
      await refusedWith(`Bearer ${expired}`, invalid("expired"), "expired");
    });

    await t.step("a token of a session that signed out is revoked", async () => {
      const made = await createUser(ctx.sql, { companyId: crypto.randomUUID(), username: "ana.reasons" });
      assert.ok("password" in made);
      const signedIn = await fetch(`${service.base}/api/v1/sign_in`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ user: { username: "ana.reasons", password: made.password } }),
      });
      const { jwt } = await signedIn.json();
      assert.equal((await call(`Bearer ${jwt}`)).status, 200);
      assert.equal((await call(`Bearer ${jwt}`, "POST", "/api/v1/sign_out")).status, 204);
      await eventually("the signed-out token to be refused", async () => (await call(`Bearer ${jwt}`)).status === 401);
      await refusedWith(`Bearer ${jwt}`, invalid("revoked"), "revoked");
    });

    await t.step("an accepted token: no challenge, and no reason in its log line", async () => {
      const res = await call(`Bearer ${good}`);
      assert.deepEqual([res.status, res.challenge], [200, null]);
      const line = await logLineOf(res.requestId);
      assert.equal(line.status, 200);
      assert.equal("auth_failure" in line, false);
    });
  } finally {
    await service.stop();
    await ctx.close();
  }
});
