/**
 * Client certificates (mTLS) as an integrator uses them, against the real service and an https receiver that
 * requires a client certificate from its own authority (docs/webhooks.md, "Client certificates (mTLS)"): without one
 * the attempt fails with a TLS error, with one it is delivered and signed as usual, over one kept connection; the
 * answer shows the certificate and never the key; what does not parse, match or is expired is refused with 422; null
 * removes it; `deno task reseal-secrets` moves its sealed key to a new SECRET_ENCRYPTION_KEY.
 */
import assert from "node:assert/strict";
import https from "node:https";
import { X509Certificate } from "node:crypto";
import type { TLSSocket } from "node:tls";
import { connect } from "../../domain/infra/db.ts";
import { setLogLevel } from "../../domain/basics/log.ts";
import { verifySignature } from "../../domain/webhooks/endpoints/signature.ts";
import { dropDatabase, eventually, migratedDatabase } from "../support/helpers.ts";
import { httpCompany, runTask, startService } from "../support/service_process.ts";
import { createSecretBox } from "../../domain/infra/secret_box.ts";
import { type DeliveryRecord, ENDPOINTS, EVENTS } from "../support/endpoints.ts";

const fixturePath = (name: string) => new URL(`../fixtures/tls/${name}`, import.meta.url).pathname;
const fixture = (name: string) => Deno.readTextFileSync(fixturePath(name));
/** The test authorities and certificates of tests/fixtures/tls/README.md. */
const CLIENT = { certificate: fixture("client.pem"), private_key: fixture("client.key") };
const EXPIRED = { certificate: fixture("client_expired.pem"), private_key: fixture("client_expired.key") };
const REQUIRES_CERTIFICATE = /^TLS: the receiver requires a client certificate/;

type Arrival = { raw: string; headers: Record<string, string | string[] | undefined>; clientName: string };

/**
 * An https receiver on loopback (the `127.0.0.1` certificate of the bench's authority) that completes a handshake only
 * with a client certificate issued by `client_ca.pem`; it counts handshakes and records who sent what.
 */
async function mtlsReceiver() {
  const arrivals: Arrival[] = [];
  let handshakes = 0;
  const server = https.createServer({
    cert: fixture("loopback.pem"),
    key: fixture("loopback.key"),
    ca: fixture("client_ca.pem"),
    requestCert: true,
    rejectUnauthorized: true,
  }, (req, res) => {
    let raw = "";
    req.on("data", (chunk) => raw += chunk);
    req.on("end", () => {
      const peer = (req.socket as TLSSocket).getPeerCertificate();
      arrivals.push({ raw, headers: req.headers, clientName: String(peer?.subject?.CN ?? "") });
      res.end("ok");
    });
  });
  server.on("secureConnection", () => handshakes++);
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  const { port } = server.address() as { port: number };
  return {
    url: `https://127.0.0.1:${port}/hooks`,
    arrivals,
    handshakes: () => handshakes,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((ok) => server.close(() => ok()));
    },
  };
}

Deno.test("an endpoint with a client certificate is delivered to a receiver that requires one", async (t) => {
  setLogLevel("silent");
  const url = await migratedDatabase("webhook_client_certificates");
  const sql = connect(url, { max: 1 });
  const receiver = await mtlsReceiver();
  const firstKey = crypto.getRandomValues(new Uint8Array(32)).toHex();
  const secondKey = crypto.getRandomValues(new Uint8Array(32)).toHex();
  // only this service trusts the receiver's test authority (tests/fixtures/tls/README.md)
  const serviceWith = (keys: Record<string, string>) =>
    startService(url, { NODE_EXTRA_CA_CERTS: fixturePath("loopback_ca.pem"), WEBHOOK_RETRY_SCHEDULE: "60", ...keys });
  let service = await serviceWith({ SECRET_ENCRYPTION_KEY: firstKey });
  const company = await httpCompany();
  const call = (method: string, path: string, body?: unknown) => company.call(service.base, method, path, body);
  const records = async (endpointId: string): Promise<DeliveryRecord[]> =>
    (await call("GET", `${EVENTS}?endpoint_id=${endpointId}&order_by=asc&per_page=100`)).body.data;
  /** Sends a test event and waits for its record to leave its first attempt behind. */
  const sendTest = async (endpointId: string) => {
    const sent = await call("POST", `${ENDPOINTS}/${endpointId}/test`, { type: "identified" });
    assert.equal(sent.status, 202, JSON.stringify(sent.body));
    return await eventually("the test event's first attempt", async () => {
      const record = (await records(endpointId)).find((r) => r.id === sent.body.data.id);
      return record && record.attempts_count > 0 ? record : null;
    });
  };

  let second = "";
  try {
    const created = await call("POST", ENDPOINTS, { url: receiver.url });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const endpoint = created.body.data;

    await t.step("without a client certificate the attempt fails with a TLS error, and nothing arrives", async () => {
      assert.equal(endpoint.client_certificate, null);
      const record = await sendTest(endpoint.id);
      assert.equal(record.status, "pending", "a failed attempt, retried on the schedule");
      assert.match(record.last_error ?? "", REQUIRES_CERTIFICATE);
      assert.equal(receiver.arrivals.length, 0);
    });

    await t.step("saving one shows its subject, issuer, fingerprint and expiry, never the key", async () => {
      const res = await call("PUT", `${ENDPOINTS}/${endpoint.id}`, { client_certificate: CLIENT });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      const leaf = new X509Certificate(CLIENT.certificate);
      assert.deepEqual(res.body.data.client_certificate, {
        subject: "O=Example Integrator, CN=payments-api test client",
        issuer: "CN=payments-api test client authority",
        fingerprint_sha256: leaf.fingerprint256,
        not_before: "2025-01-01T00:00:00.000Z",
        expires_at: "2126-11-01T00:00:00.000Z",
      });
      const keyBody = CLIENT.private_key.split("\n")[1];
      for (const answer of [res, await call("GET", `${ENDPOINTS}/${endpoint.id}`), await call("GET", ENDPOINTS)]) {
        assert.equal(answer.status, 200);
        assert.ok(!JSON.stringify(answer.body).includes(keyBody), "the key is never shown");
      }
      const [stored] = await sql<{ sealed_client_key: string }[]>`
        select sealed_client_key from webhook_endpoints where id = ${endpoint.id}`;
      assert.match(stored.sealed_client_key, /^enc:v1:/);
      assert.ok(!stored.sealed_client_key.includes(keyBody), "the key is sealed at rest");
    });

    await t.step("with it, deliveries arrive signed as usual, over one kept connection", async () => {
      const before = receiver.handshakes();
      for (let i = 0; i < 3; i++) {
        const record = await sendTest(endpoint.id);
        assert.deepEqual([record.status, record.last_error], ["succeeded", null]);
      }
      assert.equal(receiver.arrivals.length, 3);
      for (const arrival of receiver.arrivals) {
        assert.equal(arrival.clientName, "payments-api test client");
        const signature = arrival.headers["service-signature"] as string;
        assert.ok(await verifySignature(arrival.raw, signature, endpoint.secret), "the signature verifies");
      }
      // one handshake for the three; a loaded machine may leave the kept connection idle past the pool's 4 s once,
      // while three handshakes would mean none was kept
      const handshakes = receiver.handshakes() - before;
      assert.ok(handshakes >= 1 && handshakes < 3, `${handshakes} TLS handshakes for three attempts`);
    });

    await t.step("a key that does not match, an expired certificate or text that is not PEM is refused", async () => {
      const refusals: [unknown, Record<string, unknown>][] = [
        [
          { ...CLIENT, private_key: EXPIRED.private_key },
          { private_key: ["does not match the certificate (the client certificate is the first one of the PEM)"] },
        ],
        [EXPIRED, { certificate: ["has expired (on 2021-01-01T00:00:00.000Z)"] }],
        [
          {
            certificate: "not a certificate",
            private_key: "-----BEGIN PRIVATE KEY-----\ngarbage\n-----END PRIVATE KEY-----",
          },
          {
            certificate: [
              "must be a PEM certificate (-----BEGIN CERTIFICATE-----), the client certificate first, then its " +
              "intermediates",
            ],
            private_key: ["must be an unencrypted PEM private key (-----BEGIN PRIVATE KEY-----)"],
          },
        ],
        [{ ...CLIENT, certificate: CLIENT.certificate.repeat(30) }, {
          certificate: ["is too long (at most 16384 characters)"],
        }],
        [{ certificate: 5, private_key: EXPIRED.private_key }, { certificate: ["is invalid: must be a string"] }],
      ];
      for (const [client_certificate, errors] of refusals) {
        const updated = await call("PUT", `${ENDPOINTS}/${endpoint.id}`, { client_certificate });
        assert.equal(updated.status, 422, JSON.stringify(updated.body));
        assert.deepEqual(updated.body.errors, { client_certificate: errors });
        const other = `${receiver.url}/other-${crypto.randomUUID()}`;
        const createdAnyway = await call("POST", ENDPOINTS, { url: other, client_certificate });
        assert.equal(createdAnyway.status, 422, JSON.stringify(createdAnyway.body));
      }
      const shown = await call("GET", `${ENDPOINTS}/${endpoint.id}`);
      assert.equal(shown.body.data.client_certificate.subject, "O=Example Integrator, CN=payments-api test client");
    });

    await t.step("null removes it: the receiver refuses the next attempt again", async () => {
      const res = await call("PUT", `${ENDPOINTS}/${endpoint.id}`, { client_certificate: null });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.data.client_certificate, null);
      const record = await sendTest(endpoint.id);
      assert.match(record.last_error ?? "", REQUIRES_CERTIFICATE);
      assert.equal(receiver.arrivals.length, 3);
      const [stored] = await sql<{ client_certificate: string | null; sealed_client_key: string | null }[]>`
        select client_certificate, sealed_client_key from webhook_endpoints where id = ${endpoint.id}`;
      assert.deepEqual(stored, { client_certificate: null, sealed_client_key: null });
    });

    await t.step("a new endpoint can be created with one", async () => {
      const res = await call("POST", ENDPOINTS, { url: `${receiver.url}/second`, client_certificate: CLIENT });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      assert.equal(res.body.data.client_certificate.issuer, "CN=payments-api test client authority");
      const record = await sendTest(res.body.data.id);
      assert.equal(record.status, "succeeded", record.last_error ?? "");
      second = res.body.data.id;
    });

    await t.step(
      "after SECRET_ENCRYPTION_KEY is rotated, reseal-secrets moves the client keys to the new key",
      async () => {
        await service.stop();
        const keys = { SECRET_ENCRYPTION_KEY: secondKey, SECRET_ENCRYPTION_KEY_PREVIOUS: firstKey };
        const command = await runTask(url, ["reseal-secrets"], { LOG_LEVEL: "silent", JWT_SECRET: undefined, ...keys });
        assert.equal(command.code, 0, command.stderr);
        assert.match(command.stdout, /\n1 client certificate key\(s\) re-sealed/);
        const box = await createSecretBox(Uint8Array.fromHex(secondKey));
        const sealed = await sql<{ sealed_client_key: string }[]>`
        select sealed_client_key from webhook_endpoints where sealed_client_key is not null`;
        assert.deepEqual(sealed.map((r) => r.sealed_client_key.startsWith(box.currentPrefix)), [true]);
        service = await serviceWith({ SECRET_ENCRYPTION_KEY: secondKey });
        const record = await sendTest(second);
        assert.equal(record.status, "succeeded", record.last_error ?? "");
      },
    );
  } finally {
    await service.stop();
    await receiver.close();
    await sql.end();
    await dropDatabase(url);
  }
});
