/**
 * What a server's answer is cleared of (domain/webhooks/engine/redaction.ts), alone (pure): a secret echoed in each
 * encoding a token server or a receiver may use, a Basic credential holding it, a mix of them, and an answer cut in the
 * middle of one, each read as its label; text around it, and text that only looks like it, left as it was.
 */
import assert from "node:assert/strict";
import { MIN_TAIL_CHARS, redactSecrets, type Secret } from "../../domain/webhooks/engine/redaction.ts";
import { tokenRequest } from "../../domain/webhooks/engine/oauth2_tokens.ts";
import type { StoredOAuth2 } from "../../domain/webhooks/endpoints/endpoint_row.ts";

const SECRET = "S3cr3t value+&=x";
const LABEL = "[client secret]";
const credentials: StoredOAuth2 = {
  token_url: "https://auth.example.com/token",
  client_id: "echo client",
  sealed_client_secret: "enc:v1:...",
  scope: null,
  audience: null,
  client_auth: "client_secret_basic",
};
/** The secret as a Basic token request sends it, with the Basic credentials it is inside. */
const basic = tokenRequest(credentials, SECRET).secret;
const formEncoded = (v: string) => encodeURIComponent(v).replace(/%20/g, "+");
const base64 = (v: string) => new TextEncoder().encode(v).toBase64();

Deno.test("a secret is cleared in every encoding a server may echo it in", () => {
  const echoes: [string, string][] = [
    ["raw", SECRET],
    ["form-encoded (RFC 6749 Appendix B)", formEncoded(SECRET)],
    ["form-encoded (URLSearchParams)", new URLSearchParams({ s: SECRET }).toString().slice(2)],
    ["percent-encoded (encodeURIComponent)", encodeURIComponent(SECRET)],
    ["percent-encoded, lower-case hex", encodeURIComponent(SECRET).replace(/%[0-9A-F]{2}/g, (h) => h.toLowerCase())],
    ["JSON-escaped", JSON.stringify(SECRET).slice(1, -1)],
    ["JSON-escaped as \\u", [...SECRET].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`).join("")],
    ["a form body in a JSON string", JSON.stringify(`client_secret=${formEncoded(SECRET)}`).slice(1, -1)],
    ["Basic credential of the form-encoded pair", btoa(`${formEncoded("echo client")}:${formEncoded(SECRET)}`)],
    ["Basic credential of the raw pair", base64(`echo client:${SECRET}`)],
    [
      "Basic credential, JSON with escaped slashes",
      JSON.stringify(basic.sentAs![0]).slice(1, -1).replace(/\//g, "\\/"),
    ],
    ["Basic credential, percent-encoded", encodeURIComponent(`Basic ${basic.sentAs![1]}`)],
  ];
  for (const [what, echo] of echoes) {
    const text = `error: got <${echo}> from you`;
    const cleared = redactSecrets(text, [basic]);
    assert.ok(cleared.includes(LABEL), `${what}: ${cleared}`);
    assert.ok(!cleared.includes(echo), `${what}: ${cleared}`);
    assert.ok(cleared.startsWith("error: got <") && cleared.endsWith("> from you"), `${what}: ${cleared}`);
    for (const part of [SECRET, formEncoded(SECRET), encodeURIComponent(SECRET), "S3cr3t"]) {
      assert.ok(!cleared.includes(part), `${what}: ${cleared}`);
    }
  }
});

Deno.test("every occurrence of every secret is cleared, each by its own label, the longest first", () => {
  const secrets: Secret[] = [
    { value: "abc123abc123", label: "[short]" },
    { value: "xx-abc123abc123-yy", label: "[long]" },
    { value: "-----BEGIN PRIVATE KEY-----\nMIGH\n-----END PRIVATE KEY-----", label: "[key]" },
  ];
  const text = `a=abc123abc123&b=xx-abc123abc123-yy ${JSON.stringify(secrets[2].value)} again abc123abc123`;
  assert.equal(redactSecrets(text, secrets), 'a=[short]&b=[long] "[key]" again [short]');
});

Deno.test("an answer cut inside a secret loses the start that is left; text like a secret stays", () => {
  const cut = `...client_secret=${formEncoded(SECRET).slice(0, MIN_TAIL_CHARS + 2)}`;
  assert.equal(redactSecrets(cut, [basic]), `...client_secret=${LABEL}`);
  const tooShort = `...${SECRET.slice(0, MIN_TAIL_CHARS - 1)}`;
  assert.equal(redactSecrets(tooShort, [basic]), tooShort, "fewer characters could be a coincidence");
  for (const text of ["", "ok", "100% done + more", "S3cr3t value, then", "\\u12 %zz \\q", "S3cr3t valuE+&=x"]) {
    assert.equal(redactSecrets(text, [basic]), text);
  }
  assert.equal(redactSecrets("anything", []), "anything");
  assert.equal(redactSecrets("a 😀 b", [{ value: "😀", label: "[e]" }]), "a [e] b");
  assert.equal(redactSecrets('"\\ud83d\\ude00"', [{ value: "😀", label: "[e]" }]), '"[e]"');
});
