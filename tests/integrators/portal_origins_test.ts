/**
 * The origins a portal link may name and the routes its session may call: pure rules, run without a database, since
 * what the first accepts goes into a Content-Security-Policy as it is and the second bounds a platform's customer.
 */
import assert from "node:assert/strict";
import {
  frameAncestors,
  HTTPS_ONLY,
  ORIGIN_FORMAT,
  parseAllowedOrigins,
  parseOrigin,
} from "../../domain/integrators/portal_origins.ts";
import { ApiError } from "../../domain/basics/errors.ts";
import { portalMayCall } from "../../routes/policy/portal_scope.ts";

const development = { allowLoopbackHttp: true };
const production = { allowLoopbackHttp: false };

Deno.test("an origin is kept in the form browsers compare: lower-case host, no default port, no slash", () => {
  assert.deepEqual(parseOrigin("https://App.Example.COM/", production), { origin: "https://app.example.com" });
  assert.deepEqual(parseOrigin("https://app.example.com:443", production), { origin: "https://app.example.com" });
  assert.deepEqual(parseOrigin("https://app.example.com:8443", production), { origin: "https://app.example.com:8443" });
  assert.deepEqual(parseOrigin("https://203.0.113.7", production), { origin: "https://203.0.113.7" });
  assert.deepEqual(parseOrigin("https://[2001:db8::1]:8443", production), { origin: "https://[2001:db8::1]:8443" });
  assert.deepEqual(parseOrigin("https://bücher.example", production), { origin: "https://xn--bcher-kva.example" });
});

Deno.test("anything but scheme, host and port is refused, so nothing else reaches the policy header", () => {
  for (
    const input of [
      "app.example.com",
      "https://app.example.com/embed",
      "https://app.example.com?x=1",
      "https://app.example.com/#top",
      "https://user:pass@app.example.com",
      "https://*.example.com",
      "*",
      "'self'",
      "https://a.example;script-src *",
      "https://a.example, https://b.example",
      "https://a.example https://b.example",
      "ftp://app.example.com",
      "data:text/html,hi",
      "javascript:alert(1)",
      "",
    ]
  ) {
    assert.deepEqual(parseOrigin(input, development), { error: ORIGIN_FORMAT }, input);
  }
});

Deno.test("http only for a loopback host, and only in development", () => {
  for (const input of ["http://127.0.0.1:4001", "http://localhost:3000", "http://[::1]:8080"]) {
    assert.ok("origin" in parseOrigin(input, development), input);
    assert.deepEqual(parseOrigin(input, production), { error: HTTPS_ONLY }, input);
  }
  assert.deepEqual(parseOrigin("http://app.example.com", development), { error: HTTPS_ONLY });
  assert.deepEqual(parseOrigin("http://10.0.0.1", development), { error: HTTPS_ONLY });
});

Deno.test("a list keeps each origin once and names every refused one by its place", () => {
  assert.deepEqual(
    parseAllowedOrigins(["https://a.example", "https://A.example/", "https://b.example"], production),
    ["https://a.example", "https://b.example"],
  );
  assert.throws(
    () => parseAllowedOrigins(["https://a.example", "http://b.example", "https://c.example/x"], production),
    (err: unknown) => {
      assert.ok(err instanceof ApiError);
      assert.equal(err.status, 422);
      assert.deepEqual(err.errors, { allowed_origins: { "1": [HTTPS_ONLY], "2": [ORIGIN_FORMAT] } });
      return true;
    },
  );
});

Deno.test("frame-ancestors names exactly the link's origins, or nobody", () => {
  assert.equal(
    frameAncestors(["https://a.example", "https://b.example:8443"]),
    "https://a.example https://b.example:8443",
  );
  assert.equal(frameAncestors([]), "'none'");
});

Deno.test("a portal session calls what an endpoint owner does and sign-out, never the operator's routes", () => {
  const id = "0190f0e2-7c3b-7d4e-9a51-2f1c3b5d7e90";
  for (
    const [method, path] of [
      ["GET", "/api/v2/notifications/endpoints"],
      ["POST", "/api/v2/notifications/endpoints"],
      ["GET", `/api/v2/notifications/endpoints/${id}`],
      ["HEAD", `/api/v2/notifications/endpoints/${id}`],
      ["PUT", `/api/v2/notifications/endpoints/${id}`],
      ["DELETE", `/api/v2/notifications/endpoints/${id}`],
      ["POST", `/api/v2/notifications/endpoints/${id}/rotate_secret`],
      ["POST", `/api/v2/notifications/endpoints/${id}/enable`],
      ["POST", `/api/v2/notifications/endpoints/${id}/recover`],
      ["POST", `/api/v2/notifications/endpoints/${id}/test`],
      ["GET", `/api/v2/notifications/endpoints/${id}/stats`],
      ["GET", "/api/v2/notifications/events"],
      ["GET", `/api/v2/notifications/events/${id}`],
      ["PUT", `/api/v2/notifications/events/${id}/acknowledge`],
      ["POST", `/api/v2/notifications/events/${id}/retry`],
      ["GET", "/api/v2/notifications/event_types"],
      ["POST", "/api/v1/sign_out"],
    ]
  ) assert.ok(portalMayCall(method, path), `${method} ${path}`);
  for (
    const [method, path] of [
      ["DELETE", "/api/v2/notifications/endpoints"], // every endpoint of the company at once: the platform's
      ["POST", "/api/v2/notifications/portal_links"],
      ["GET", `/api/v2/notifications/portal_links/${id}`],
      ["DELETE", `/api/v2/notifications/portal_links/${id}`],
      ["POST", "/api/v2/notifications/portal_sessions"],
      ["GET", "/api/v2/notifications"],
      ["GET", "/api/v2/notifications/some_route_added_later"],
      ["GET", "/api/v1/transactions"],
      ["GET", "/api/v1/subject/people"],
      ["POST", "/api/sandbox/payins"],
      ["POST", "/api/v1/sign_in"],
      // pull streams are the platform's: the portal shows endpoints only (docs/webhooks.md, "Pull streams")
      ["GET", "/api/v2/notifications/streams"],
      ["POST", "/api/v2/notifications/streams"],
      ["GET", `/api/v2/notifications/streams/${id}/messages`],
      ["GET", `/api/v2/notifications/streams/${id}/live`],
    ]
  ) assert.ok(!portalMayCall(method, path), `${method} ${path}`);
});
