/**
 * The OAuth2 token cache and the token answer's reading, alone (pure: no server, no database): how long a token is
 * used, that attempts at once share one request, that the cache stays bounded, and what a refusal reads as.
 */
import assert from "node:assert/strict";
import {
  CLIENT_SECRET_LABEL,
  credentialKey,
  DEFAULT_TOKEN_SECONDS,
  readTokenAnswer,
  TokenCache,
  type TokenOutcome,
  tokenRequest,
} from "../../domain/webhooks/engine/oauth2_tokens.ts";
import type { StoredOAuth2 } from "../../domain/webhooks/endpoints/endpoint_row.ts";

const ok = (body: unknown) => ({ ok: true, httpStatus: 200, responseBody: JSON.stringify(body) });
/** A client secret as `tokenRequest` says it was sent, sent in a body (no Basic credential). */
const secret = (value: string) => ({ value, label: CLIENT_SECRET_LABEL });

Deno.test("a token is used until shortly before it expires, then fetched again", async () => {
  const cache = new TokenCache();
  let fetches = 0;
  const fetch = (): Promise<TokenOutcome> => {
    fetches++;
    return Promise.resolve(readTokenAnswer(ok({ access_token: `t${fetches}`, expires_in: 3600 }), secret("s"), 0));
  };
  assert.deepEqual(await cache.bearer("k", fetch, 0), { token: "t1", expiresAt: 3570_000 });
  assert.equal(((await cache.bearer("k", fetch, 3569_999)) as { token: string }).token, "t1");
  assert.equal(((await cache.bearer("k", fetch, 3570_000)) as { token: string }).token, "t2", "30 s before expiry");
  assert.equal(fetches, 2);
});

Deno.test("attempts asking at once share one token request; a failure is not kept", async () => {
  const cache = new TokenCache();
  let fetches = 0;
  let release!: () => void;
  const gate = new Promise<void>((r) => release = r);
  const fetch = async (): Promise<TokenOutcome> => {
    fetches++;
    await gate;
    return fetches === 1 ? { failure: "oauth2 token: HTTP 503" } : { token: "t", expiresAt: Date.now() + 60_000 };
  };
  const waiting = Array.from({ length: 20 }, () => cache.bearer("k", fetch));
  release();
  const outcomes = await Promise.all(waiting);
  assert.equal(fetches, 1);
  assert.ok(outcomes.every((o) => "failure" in o));
  assert.equal(cache.size, 0);
  assert.ok("token" in await cache.bearer("k", fetch), "the next attempt asks again");
});

Deno.test("a receiver's 401 drops only the token it refused, and the cache stays bounded", async () => {
  const cache = new TokenCache(2);
  const outcome = (token: string) => () => Promise.resolve({ token, expiresAt: Date.now() + 60_000 });
  await cache.bearer("a", outcome("old"));
  cache.drop("a", "another");
  assert.equal(((await cache.bearer("a", outcome("new"))) as { token: string }).token, "old");
  cache.drop("a", "old");
  assert.equal(((await cache.bearer("a", outcome("new"))) as { token: string }).token, "new");
  await cache.bearer("b", outcome("b"));
  await cache.bearer("c", outcome("c"));
  assert.equal(cache.size, 2);
  assert.equal(((await cache.bearer("a", outcome("again"))) as { token: string }).token, "again", "the oldest went");
});

Deno.test("a token answer reads as RFC 6749 §5.1 and §5.2 have it, and never repeats the client secret", () => {
  assert.deepEqual(readTokenAnswer(ok({ access_token: "x", token_type: "bearer" }), secret("s"), 0), {
    token: "x",
    expiresAt: (DEFAULT_TOKEN_SECONDS - 30) * 1000,
  });
  assert.deepEqual(readTokenAnswer(ok({ access_token: "x", expires_in: "10" }), secret("s"), 0), {
    token: "x",
    expiresAt: 8000,
  });
  const refused = { ok: false, httpStatus: 400, responseBody: '{"error":"invalid_client","error_description":"s3"}' };
  assert.deepEqual(readTokenAnswer(refused, secret("s3"), 0), {
    failure: "oauth2 token: HTTP 400 invalid_client ([client secret])",
  });
  assert.deepEqual(readTokenAnswer({ ok: false, httpStatus: 0, responseBody: "timeout after 10 ms" }, secret("s"), 0), {
    failure: "oauth2 token: timeout after 10 ms",
  });
  assert.match(
    (readTokenAnswer(ok({ token_type: "bearer" }), secret("s"), 0) as { failure: string }).failure,
    /no access_token/,
  );
  assert.match(
    (readTokenAnswer(ok({ access_token: "x", token_type: "mac" }), secret("s"), 0) as { failure: string }).failure,
    /not bearer/,
  );
  assert.match(
    (readTokenAnswer(ok({ access_token: "x\r\nset-cookie: a" }), secret("s"), 0) as { failure: string }).failure,
    /printable ASCII/,
  );
  const cut = { ok: true, httpStatus: 200, responseBody: '{"access_token":"' + "a".repeat(100) };
  assert.match((readTokenAnswer(cut, secret("s"), 0) as { failure: string }).failure, /not a JSON object/);
});

Deno.test("the token request authenticates with HTTP Basic by default, form-encoding id and secret first", () => {
  const credentials: StoredOAuth2 = {
    token_url: "https://auth.example.com/token",
    client_id: "id:1",
    sealed_client_secret: "enc:v1:...",
    scope: "a b",
    audience: null,
    client_auth: "client_secret_basic",
  };
  const basic = tokenRequest(credentials, "p&ss word");
  assert.equal(basic.body, "grant_type=client_credentials&scope=a+b");
  assert.equal(basic.headers.authorization, `Basic ${btoa("id%3A1:p%26ss+word")}`);
  assert.equal(basic.headers["content-type"], "application/x-www-form-urlencoded");
  const post = tokenRequest({ ...credentials, client_auth: "client_secret_post", audience: "api" }, "p&ss");
  assert.equal(post.body, "grant_type=client_credentials&scope=a+b&audience=api&client_id=id%3A1&client_secret=p%26ss");
  assert.equal(post.headers.authorization, undefined);
});

Deno.test("a token is kept for the origin of the endpoint's URL: another scheme, host or port is another token", () => {
  const credentials: StoredOAuth2 = {
    token_url: "https://auth.example.com/token",
    client_id: "c",
    sealed_client_secret: "enc:v1:...",
    scope: null,
    audience: null,
    client_auth: "client_secret_basic",
  };
  const key = (url: string) => credentialKey("e1", url, credentials);
  assert.equal(
    key("https://hooks.example.com/a"),
    key("https://hooks.example.com:443/b?x=1"),
    "a path is not an origin",
  );
  assert.equal(key("https://hooks.example.com/a"), key("https://HOOKS.example.com/a"));
  for (const other of ["https://evil.example/a", "http://hooks.example.com/a", "https://hooks.example.com:8443/a"]) {
    assert.notEqual(key("https://hooks.example.com/a"), key(other), other);
  }
});

Deno.test("the token request says how it sent the secret: in the body, or inside a Basic credential", () => {
  const credentials: StoredOAuth2 = {
    token_url: "https://auth.example.com/token",
    client_id: "id 1",
    sealed_client_secret: "enc:v1:...",
    scope: null,
    audience: null,
    client_auth: "client_secret_basic",
  };
  const basic = tokenRequest(credentials, "p&ss word");
  assert.deepEqual(basic.secret, {
    value: "p&ss word",
    label: CLIENT_SECRET_LABEL,
    sentAs: [btoa("id+1:p%26ss+word"), btoa("id 1:p&ss word")],
  });
  assert.equal(basic.headers.authorization, `Basic ${basic.secret.sentAs![0]}`);
  const post = tokenRequest({ ...credentials, client_auth: "client_secret_post" }, "p&ss word");
  assert.deepEqual(post.secret, { value: "p&ss word", label: CLIENT_SECRET_LABEL });
});
