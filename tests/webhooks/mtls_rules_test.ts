/**
 * The rules an mTLS client certificate is saved by (domain/webhooks/endpoints/mtls.ts), without a database: a chain
 * with intermediates, validity of every certificate at the moment of saving, keys in other forms, the bounds, and
 * what the endpoint object shows of a chain. The story over HTTP is client_certificates_test.ts.
 */
import assert from "node:assert/strict";
import { createPrivateKey } from "node:crypto";
import { ErrorBag } from "../../domain/basics/errors.ts";
import { checkClientCertificate, presentClientCertificate } from "../../domain/webhooks/endpoints/mtls.ts";

const fixture = (name: string) => Deno.readTextFileSync(new URL(`../fixtures/tls/${name}`, import.meta.url));
const LEAF = fixture("client.pem");
const KEY = fixture("client.key");
const AUTHORITY = fixture("client_ca.pem");

/** The errors `checkClientCertificate` gives, as the 422 body names them under `client_certificate`. */
function refusals(certificate: unknown, privateKey: unknown, now?: Date) {
  const errors = new ErrorBag();
  checkClientCertificate(errors, { certificate, private_key: privateKey }, now);
  return errors.errors.client_certificate ?? null;
}

Deno.test("what a client certificate is saved with", async (t) => {
  await t.step("the certificate with its authority after it: the key is checked against the first", () => {
    assert.equal(refusals(`${LEAF}\n${AUTHORITY}`, KEY), null);
    assert.deepEqual(refusals(`${AUTHORITY}\n${LEAF}`, KEY), {
      private_key: ["does not match the certificate (the client certificate is the first one of the PEM)"],
    });
    assert.equal(
      presentClientCertificate({ client_certificate: `${LEAF}\n${AUTHORITY}` })?.subject,
      "O=Example Integrator, CN=payments-api test client",
    );
  });

  await t.step("every certificate of the chain must be valid at the moment of saving", () => {
    assert.deepEqual(refusals(`${LEAF}\n${fixture("client_expired.pem")}`, KEY), {
      certificate: ["has expired (an intermediate, on 2021-01-01T00:00:00.000Z)"],
    });
    assert.deepEqual(refusals(LEAF, KEY, new Date("2024-06-01T00:00:00Z")), {
      certificate: ["is not valid yet (from 2025-01-01T00:00:00.000Z)"],
    });
  });

  await t.step("keys: PKCS#8 or the EC form; an encrypted one is refused", () => {
    const ecForm = createPrivateKey(KEY).export({ format: "pem", type: "sec1" }) as string;
    assert.match(ecForm, /^-----BEGIN EC PRIVATE KEY-----/);
    assert.equal(refusals(LEAF, ecForm), null);
    const encrypted = createPrivateKey(KEY).export({
      format: "pem",
      type: "pkcs8",
      cipher: "aes-256-cbc",
      passphrase: "secret",
    }) as string;
    assert.deepEqual(refusals(LEAF, encrypted), {
      private_key: ["must be an unencrypted PEM private key (-----BEGIN PRIVATE KEY-----)"],
    });
  });

  await t.step("bounded: at most 5 certificates, 16 KiB of certificate and 8 KiB of key", () => {
    assert.deepEqual(refusals(Array(6).fill(LEAF).join("\n"), KEY), {
      certificate: ["must hold at most 5 certificates (the client's and its intermediates)"],
    });
    assert.deepEqual(refusals(LEAF, `${KEY}${" ".repeat(8 * 1024)}`), {
      private_key: ["is too long (at most 8192 characters)"],
    });
  });

  await t.step("a field the body's shape refused is left to it", () => {
    assert.equal(refusals(undefined, KEY), null);
    assert.equal(refusals(LEAF, 42), null);
  });
});
