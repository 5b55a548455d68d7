/**
 * Why a bearer token is refused, as a pure function: `checkBearer`'s reason for every way a token can be wrong, and
 * the RFC 6750 challenge each becomes. Apart from auth_test.ts (the 401s over the app) so the reasons are checked
 * without a database, and the signature-before-claims order with tokens no HTTP test needs.
 */
import assert from "node:assert/strict";
import { sign } from "hono/jwt";
import {
  bearerMatches,
  checkBearer,
  isRefusal,
  REFUSED,
  type TokenRefusal,
  verifyBearer,
} from "../../domain/integrators/tokens.ts";
import { bearerChallenge } from "../../routes/policy/auth.ts";
import { TEST_JWT_SECRET, TEST_TOKENS } from "../support/helpers.ts";

const b64url = (obj: unknown) => btoa(JSON.stringify(obj)).replace(/=+$/, "").replace(/\+/g, "-").replace(/\//g, "_");
const OTHER_SECRET = "another-secret-of-at-least-32-bytes-long";

Deno.test("a refused bearer token says why, and only a token this service signed hears about its claims", async (t) => {
  const now = Math.floor(Date.now() / 1000);
  const sub = crypto.randomUUID();
  const claims = { sub, iss: TEST_TOKENS.jwtIssuer, aud: TEST_TOKENS.jwtAudience, iat: now, exp: now + 60 };
  const jwt = (payload: Record<string, unknown>, secret = TEST_JWT_SECRET) => sign(payload, secret, "HS256");
  const without = (key: string) => Object.fromEntries(Object.entries(claims).filter(([k]) => k !== key));
  const good = await jwt(claims);

  await t.step("a good token is verified, with its company", async () => {
    const checked = await checkBearer(TEST_TOKENS, `Bearer ${good}`);
    assert.ok(!("reason" in checked));
    assert.equal(checked.companyId, sub);
    assert.equal((await verifyBearer(TEST_TOKENS, `Bearer ${good}`))?.companyId, sub);
  });

  await t.step("the scheme is read in any case (RFC 7235, section 2.1)", async () => {
    for (const scheme of ["bearer", "BEARER", "bEaReR"]) {
      const checked = await checkBearer(TEST_TOKENS, `${scheme} ${good}`);
      assert.ok(!isRefusal(checked), `${scheme}: ${isRefusal(checked) ? checked.description : ""}`);
      assert.equal(checked.companyId, sub);
    }
  });

  const cases: [string, string | undefined, TokenRefusal][] = [
    ["no header", undefined, REFUSED.missing],
    ["an empty header", "", REFUSED.missing],
    ["another scheme", `Basic ${btoa("ana:secret")}`, REFUSED.missing],
    ["a bare JWT, without its scheme", good, REFUSED.scheme],
    ["two spaces after bearer in lower case", `bearer  ${good}`, REFUSED.spaces],
    ["Bearer with nothing after it", "Bearer", REFUSED.empty],
    ["Bearer and a space", "Bearer ", REFUSED.empty],
    ["Bearer twice", `Bearer Bearer ${good}`, REFUSED.words],
    ["two spaces after Bearer", `Bearer  ${good}`, REFUSED.spaces],
    ["a token that is not a JWT", "Bearer abc", REFUSED.notJwt],
    ["three parts whose header is not JSON", "Bearer abc.def.ghi", REFUSED.headerNotJson],
    ["three parts that are not JSON", "Bearer not.a.jwt", REFUSED.headerNotJson],
    ["a JSON header and claims that are not JSON", `Bearer ${b64url({ alg: "HS256" })}.def.ghi`, REFUSED.claimsNotJson],
    [
      "claims that are JSON but not an object, with a signature that is not base64url",
      `Bearer ${b64url({ alg: "HS256", typ: "JWT" })}.${b64url(7)}.a`,
      REFUSED.claimsNotObject,
    ],
    [
      "a JSON header and claims, and a signature that is not base64url",
      `Bearer ${b64url({ alg: "HS256", typ: "JWT" })}.${b64url(claims)}.a`,
      REFUSED.signatureNotBase64,
    ],
    ["alg none", `Bearer ${b64url({ alg: "none", typ: "JWT" })}.${b64url(claims)}.`, REFUSED.header],
    ["alg HS512", `Bearer ${await sign(claims, TEST_JWT_SECRET, "HS512")}`, REFUSED.algorithm],
    ["another secret", `Bearer ${await jwt(claims, OTHER_SECRET)}`, REFUSED.signature],
    [
      "a forged token with an expired exp: the signature is named, not the exp",
      `Bearer ${await jwt(
        { ...claims, iat: now - 300, exp: now - 200 },
        OTHER_SECRET,
      )}`,
      REFUSED.signature,
    ],
    ["expired past the leeway", `Bearer ${await jwt({ ...claims, iat: now - 300, exp: now - 61 })}`, REFUSED.expired],
    ["another iss", `Bearer ${await jwt({ ...claims, iss: "someone-else" })}`, REFUSED.issuer],
    ["no aud", `Bearer ${await jwt(without("aud"))}`, REFUSED.audience],
    ["a non-UUID sub", `Bearer ${await jwt({ ...claims, sub: "company-1" })}`, REFUSED.subject],
    ["no exp", `Bearer ${await jwt(without("exp"))}`, REFUSED.times],
    [
      "a lifetime over the maximum",
      `Bearer ${await jwt({ ...claims, exp: now + TEST_TOKENS.jwtMaxTtlSeconds + 1 })}`,
      REFUSED.lifetime,
    ],
    ["iat in the future", `Bearer ${await jwt({ ...claims, iat: now + 3600, exp: now + 7200 })}`, REFUSED.early],
    ["nbf in the future", `Bearer ${await jwt({ ...claims, nbf: now + 62 })}`, REFUSED.early],
    ["a jti that is not a session id", `Bearer ${await jwt({ ...claims, jti: "my-session" })}`, REFUSED.session],
    ["signed claims that are not an object", `Bearer ${await signedRaw("null")}`, REFUSED.claimsNotObject],
  ];
  for (const [name, header, expected] of cases) {
    await t.step(`${name}: ${expected.description}`, async () => {
      assert.equal(await checkBearer(TEST_TOKENS, header), expected);
      assert.equal(await verifyBearer(TEST_TOKENS, header), null);
    });
  }

  await t.step("each description starts with its reason, one of a closed set", () => {
    const reasons = new Set(["missing", "malformed", "bad signature", "expired", "revoked", "invalid claims"]);
    for (const refusal of Object.values(REFUSED)) {
      assert.ok(reasons.has(refusal.reason), refusal.reason);
      assert.ok(refusal.description.startsWith(refusal.reason), refusal.description);
    }
  });
});

Deno.test("the metrics token is matched with its scheme in any case, as a JWT is", async () => {
  assert.ok(await bearerMatches("Bearer metrics-secret", "metrics-secret"));
  assert.ok(await bearerMatches("bearer metrics-secret", "metrics-secret"));
  assert.ok(!(await bearerMatches("Basic metrics-secret", "metrics-secret")));
  assert.ok(!(await bearerMatches("bearer other", "metrics-secret")));
});

Deno.test("the WWW-Authenticate challenge of each refusal follows RFC 6750", () => {
  // no error code when the client did not attempt Bearer (RFC 6750, section 3.1)
  assert.equal(bearerChallenge(REFUSED.missing), "Bearer");
  assert.equal(bearerChallenge(REFUSED.expired), 'Bearer error="invalid_token", error_description="expired"');
  assert.equal(
    bearerChallenge(REFUSED.words),
    'Bearer error="invalid_token", error_description="malformed: expected one token after Bearer"',
  );
  // error_description allows printable ASCII but `"` and `\` (RFC 6750, section 3)
  for (const refusal of Object.values(REFUSED)) {
    assert.match(refusal.description, /^[\x20\x21\x23-\x5B\x5D-\x7E]+$/, refusal.description);
  }
});

/** An HS256 token over claims given as raw JSON text (which `sign` would not produce). */
async function signedRaw(claimsJson: string): Promise<string> {
  const enc = (s: string) => btoa(s).replace(/=+$/, "").replace(/\+/g, "-").replace(/\//g, "_");
  const input = `${enc(JSON.stringify({ alg: "HS256", typ: "JWT" }))}.${enc(claimsJson)}`;
  const key = await crypto.subtle.importKey(
    "raw",
    new TextEncoder().encode(TEST_JWT_SECRET),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(input)));
  return `${input}.${enc(String.fromCharCode(...mac))}`;
}
