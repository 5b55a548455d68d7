/**
 * The NATS JetStream transport against real servers: the shared one on 127.0.0.1:4222 (streams made per run and
 * deleted), and two short-lived nats-server processes of this file's own, for what the shared one is not set up for
 * (credentials, publish permissions, TLS). docs/webhooks.md, "NATS JetStream", says what an integrator sees.
 */
import assert from "node:assert/strict";
import net from "node:net";
import { Webhook } from "standardwebhooks";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { type JetStreamManager, jetstreamManager } from "@nats-io/jetstream";
import { ErrorBag } from "../../../domain/basics/errors.ts";
import { natsTransport } from "../../../domain/webhooks/destinations/nats.ts";
import {
  type BrokerConnection,
  type BrokerCredentials,
  type BrokerTarget,
} from "../../../domain/webhooks/destinations/transport.ts";
import { startTcpProxy } from "../../support/tcp_proxy.ts";
import { eventually } from "../../support/helpers.ts";
import { brokerFailure, docsRecipe, signedDelivery } from "../../support/broker_messages.ts";

const SHARED_PORT = 4222;
const FIXTURES = new URL("../../fixtures/tls/", import.meta.url);
const suffix = () => crypto.randomUUID().replaceAll("-", "").slice(0, 10);

const target = (port: number, secure = false, host = "127.0.0.1"): BrokerTarget => ({
  transport: "nats",
  secure,
  host,
  port,
  path: "",
});

const open = (
  port: number,
  credentials: BrokerCredentials = null,
  extra: { secure?: boolean; host?: string; ca?: string[] } = {},
) =>
  natsTransport.connect(target(port, extra.secure, extra.host), credentials, {
    address: "127.0.0.1",
    clientId: `nats-test-${suffix()}`,
    timeoutMs: 2000,
    ...(extra.ca ? { ca: extra.ca } : {}),
  });

/** A delivery as the engine makes it, signed with `secret`. */
const signed = (secret: string, type: string, data: Record<string, unknown> = {}) =>
  signedDelivery(secret, type, { data });

const secretHex = () =>
  Array.from(crypto.getRandomValues(new Uint8Array(32)), (b) => b.toString(16).padStart(2, "0")).join("");

/** A message an integrator would read: names no address, port or credential. */
function assertSafe(message: string, ...secrets: (string | number)[]) {
  for (const s of ["127.0.0.1", ...secrets.map(String)]) assert.ok(!message.includes(s), `"${message}" names ${s}`);
}

/** A JetStream stream of this run, taking `<prefix>.>`, deleted by the returned function. */
async function tempStream(jsm: JetStreamManager, opts: { duplicateWindowMs?: number } = {}) {
  const id = suffix();
  const name = `WH_${id}`;
  const prefix = `wh_${id}`;
  await jsm.streams.add({
    name,
    subjects: [`${prefix}.>`],
    ...(opts.duplicateWindowMs ? { duplicate_window: opts.duplicateWindowMs * 1_000_000 } : {}),
  });
  return { name, prefix, remove: () => jsm.streams.delete(name).catch(() => false) };
}

async function storedAt(jsm: JetStreamManager, stream: string, seq: number) {
  const m = await jsm.streams.getMessage(stream, { seq });
  assert.ok(m, `message ${seq} of ${stream}`);
  const headers = Object.fromEntries(m.header.keys().map((k) => [k, m.header.get(k)]));
  return { body: m.string(), headers, subject: m.subject };
}

async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((resolve) => s.listen(0, "127.0.0.1", resolve));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

/** A nats-server of this file (JetStream on, its own store), with the given configuration lines; stopped by `stop`. */
async function privateServer(config: string) {
  const dir = await Deno.makeTempDir({ prefix: "nats_test_" });
  const port = await freePort();
  const file = `${dir}/server.conf`;
  await Deno.writeTextFile(file, `host: 127.0.0.1\nport: ${port}\njetstream { store_dir: "${dir}/js" }\n${config}\n`);
  const child = new Deno.Command("nats-server", { args: ["-c", file], stdout: "null", stderr: "null" }).spawn();
  await eventually(
    "the private nats-server listens",
    async () => {
      try {
        (await Deno.connect({ hostname: "127.0.0.1", port })).close();
        return true;
      } catch {
        return false;
      }
    },
    5000,
    20,
  );
  return {
    port,
    stop: async () => {
      child.kill("SIGTERM");
      await child.status;
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    },
  };
}

Deno.test("NATS JetStream transport: publishes signed deliveries a stream acknowledges", async (t) => {
  const nc: NatsConnection = await connect({ servers: `127.0.0.1:${SHARED_PORT}` });
  const jsm = await jetstreamManager(nc);
  const stream = await tempStream(jsm, { duplicateWindowMs: 60_000 });
  const subject = `${stream.prefix}.{type}`;
  const secret = secretHex();
  const conns: BrokerConnection[] = [];
  const connection = await open(SHARED_PORT);
  conns.push(connection);

  try {
    await t.step("bad destinations and paths are refused naming the key", () => {
      const refused = (destination: Record<string, unknown>) => {
        const errors = new ErrorBag();
        natsTransport.checkDestination(errors, destination);
        return errors.errors;
      };
      assert.deepEqual(refused({}), { destination: { subject: ["can't be blank"] } });
      assert.deepEqual(refused({ subject: "" }), { destination: { subject: ["can't be blank"] } });
      for (const bad of ["payments {type}", "payments.*", "payments.>", "payments..{type}", ".payments", "p.", 42]) {
        const errors = refused({ subject: bad }) as { destination?: { subject?: string[] } };
        assert.ok(errors.destination?.subject?.length, `${bad} refused`);
      }
      assert.match(
        (refused({ subject: "a.".repeat(128) + "b" }) as { destination: { subject: string[] } }).destination.subject[0],
        /too long/,
      );
      assert.deepEqual(refused({ subject: "payments.{type}" }), {});
      assert.deepEqual(refused({ subject: "acme-payments.v1.{type}" }), {});
      assert.deepEqual(natsTransport.storedDestination({ subject: "payments.{type}" }), { subject: "payments.{type}" });
      assert.equal(natsTransport.describe({ subject: "payments.{type}" }, "identified"), "subject payments.identified");

      for (const ok of ["", "/"]) {
        const errors = new ErrorBag();
        assert.equal(natsTransport.parsePath(errors, ok), "");
        assert.ok(errors.empty);
      }
      const errors = new ErrorBag();
      natsTransport.parsePath(errors, "/payments");
      assert.deepEqual(Object.keys(errors.errors), ["url"]);
      assert.equal(natsTransport.defaultPort(true), 4222);
      assert.deepEqual(natsTransport.schemes, { plain: "nats", tls: "tls" });
    });

    await t.step("a delivery arrives with its body and every header, and verifies with standardwebhooks", async () => {
      const message = signed(secret, "transaction_identified", { amount: "10.00" });
      const ack = await connection.publish({ subject }, message, new AbortController().signal);
      assert.equal(ack.answer, `PubAck stream ${stream.name} seq 1`);

      const stored = await storedAt(jsm, stream.name, 1);
      assert.equal(stored.subject, `${stream.prefix}.transaction_identified`);
      assert.equal(stored.body, message.body);
      for (const [name, value] of Object.entries(message.headers)) assert.equal(stored.headers[name], value, name);
      assert.equal(stored.headers["Nats-Msg-Id"], message.id);
      assert.deepEqual(
        new Webhook(secret, { format: "raw" }).verify(stored.body, stored.headers),
        JSON.parse(message.body),
      );
    });

    await t.step(
      "an attempt sent again within the duplicate window is acknowledged as a duplicate, stored once",
      async () => {
        const message = signed(secret, "identified");
        const first = await connection.publish({ subject }, message, new AbortController().signal);
        const again = await connection.publish({ subject }, message, new AbortController().signal);
        assert.equal(first.answer, `PubAck stream ${stream.name} seq 2`);
        assert.equal(again.answer, `PubAck stream ${stream.name} seq 2 duplicate`);
        assert.equal((await jsm.streams.info(stream.name)).state.messages, 2);
      },
    );

    await t.step(
      "30 deliveries published one after another arrive in order, once each, over one connection",
      async () => {
        const relay = await startTcpProxy(SHARED_PORT);
        const counted = await open(relay.port);
        const messages = Array.from({ length: 30 }, (_, i) => signed(secret, "identified", { n: i }));
        try {
          for (const m of messages) await counted.publish({ subject }, m, new AbortController().signal);
          assert.equal(counted.open, true);
          assert.equal(relay.connections(), 1, "one connection for the 30 publishes");
        } finally {
          await counted.close();
          await relay.close();
        }
        const info = await jsm.streams.info(stream.name);
        assert.equal(info.state.messages, 32);
        for (let i = 0; i < 30; i++) assert.equal((await storedAt(jsm, stream.name, 3 + i)).body, messages[i].body);
      },
    );

    await t.step("no stream on the subject is permanent, and says so without the address", async () => {
      const orphan = `orphan_${suffix()}`;
      const f = await brokerFailure(
        connection.publish({ subject: `${orphan}.{type}` }, signed(secret, "identified"), new AbortController().signal),
      );
      assert.equal(f.permanent, true);
      assert.equal(f.message, `no JetStream stream takes subject ${orphan}.identified`);
      assert.equal(connection.open, true, "the connection stays usable");
    });

    await t.step("a type that makes the subject invalid is permanent", async () => {
      const f = await brokerFailure(
        connection.publish({ subject }, signed(secret, "two words"), new AbortController().signal),
      );
      assert.equal(f.permanent, true);
      assert.match(f.message, /no valid NATS subject/);
    });

    await t.step(
      "a publish whose signal aborts rejects: aborted, or timeout when the attempt's time ran out",
      async () => {
        const early = new AbortController();
        early.abort();
        const before = await brokerFailure(connection.publish({ subject }, signed(secret, "identified"), early.signal));
        assert.match(before.message, /^aborted/);

        const during = new AbortController();
        const pending = connection.publish({ subject }, signed(secret, "identified"), during.signal);
        during.abort(new DOMException("attempt timeout", "TimeoutError"));
        const f = await brokerFailure(pending);
        assert.equal(f.permanent, false);
        assert.match(f.message, /^timeout/);
        assert.equal(connection.open, true);
      },
    );

    await t.step(
      "a cut relay fails the publish (not permanent) and closes the connection; after it, a new one publishes",
      async () => {
        const proxy = await startTcpProxy(SHARED_PORT);
        try {
          const relayed = await open(proxy.port);
          conns.push(relayed);
          await relayed.publish({ subject }, signed(secret, "identified"), new AbortController().signal);
          await proxy.cut();
          await eventually("open turns false", () => !relayed.open, 2000, 10);
          const lost = await brokerFailure(
            relayed.publish({ subject }, signed(secret, "identified"), new AbortController().signal),
          );
          assert.equal(lost.permanent, false);
          assert.match(lost.message, /connection lost/);

          const refused = await brokerFailure(open(proxy.port));
          assert.equal(refused.permanent, false);
          assert.equal(refused.message, "connection refused (ECONNREFUSED)");
          assertSafe(refused.message, proxy.port);

          await proxy.restore();
          const again = await open(proxy.port);
          conns.push(again);
          const ack = await again.publish({ subject }, signed(secret, "identified"), new AbortController().signal);
          assert.match(ack.answer, new RegExp(`^PubAck stream ${stream.name} seq \\d+$`));
        } finally {
          await proxy.close();
        }
      },
    );

    await t.step("a tls:// URL requires TLS: the plaintext server is refused, not spoken to in clear", async () => {
      const f = await brokerFailure(open(SHARED_PORT, null, { secure: true, host: "hooks.test" }));
      assert.equal(f.permanent, false);
      assert.match(f.message, /offers no TLS/);
    });

    await t.step("close() closes; open turns false", async () => {
      const c = await open(SHARED_PORT);
      assert.equal(c.open, true);
      await c.close();
      assert.equal(c.open, false);
      await c.close();
    });
  } finally {
    for (const c of conns) await c.close();
    await stream.remove();
    await nc.close();
  }
});

Deno.test("NATS JetStream transport: credentials, permissions and TLS on servers of this file", async (t) => {
  const password = `pw_${suffix()}`;
  const token = `tok_${suffix()}`;
  const secret = secretHex();
  const plain = await privateServer(`
authorization {
  users = [ { user: "hooks", password: "${password}", permissions: { publish: { deny: ["forbidden.>"] } } } ]
}`);
  const tlsServer = await privateServer(`
authorization { token: "${token}" }
tls { cert_file: "${new URL("hooks.test.pem", FIXTURES).pathname}", key_file: "${
    new URL("hooks.test.key", FIXTURES).pathname
  }" }`);
  const ca = [await Deno.readTextFile(new URL("ca.pem", FIXTURES))];
  const conns: BrokerConnection[] = [];

  try {
    await t.step("user and password: the right ones publish, a wrong one is permanent and names neither", async () => {
      const c = await open(plain.port, { username: "hooks", password });
      conns.push(c);
      const nc = await connect({ servers: `127.0.0.1:${plain.port}`, user: "hooks", pass: password });
      const jsm = await jetstreamManager(nc);
      await jsm.streams.add({ name: "PAYMENTS", subjects: ["payments.>"] });
      await jsm.streams.add({ name: "FORBIDDEN", subjects: ["forbidden.>"] });
      const ack = await c.publish(
        { subject: "payments.{type}" },
        signed(secret, "identified"),
        new AbortController().signal,
      );
      assert.equal(ack.answer, "PubAck stream PAYMENTS seq 1");

      const denied = await brokerFailure(
        c.publish({ subject: "forbidden.{type}" }, signed(secret, "identified"), new AbortController().signal),
      );
      assert.equal(denied.permanent, true);
      assert.match(denied.message, /^access refused: .*forbidden\.identified.*Permissions Violation/);
      await nc.close();

      const wrong = await brokerFailure(open(plain.port, { username: "hooks", password: "not-it" }));
      assert.equal(wrong.permanent, true);
      assert.equal(wrong.message, "access refused: the broker rejected the credentials (Authorization Violation)");
      const none = await brokerFailure(open(plain.port));
      assert.equal(none.permanent, true);
      assertSafe(wrong.message + none.message, password, "not-it", plain.port);
    });

    await t.step("refused connections over and over never end the process (a reset read after the close)", async () => {
      // the server closes on a refusal as the client does: a late ECONNRESET on a socket the client let go of
      for (let i = 0; i < 300; i++) {
        const f = await brokerFailure(open(plain.port, { username: "hooks", password: "not-it" }));
        assert.equal(f.permanent, true);
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    });

    await t.step("tls:// with a token: TLS verified against hooks.test and the given CA, then published", async () => {
      const c = await open(tlsServer.port, { token }, { secure: true, host: "hooks.test", ca });
      conns.push(c);
      const nc = await connect({
        servers: `127.0.0.1:${tlsServer.port}`,
        token,
        tls: { ca: ca[0], servername: "hooks.test" } as { ca: string },
      });
      const jsm = await jetstreamManager(nc);
      await jsm.streams.add({ name: "SECURE", subjects: ["secure.>"] });
      const message = signed(secret, "identified");
      const ack = await c.publish({ subject: "secure.{type}" }, message, new AbortController().signal);
      assert.equal(ack.answer, "PubAck stream SECURE seq 1");
      assert.equal(
        (await storedAt(jsm, "SECURE", 1)).headers["webhook-signature"],
        message.headers["webhook-signature"],
      );
      await nc.close();
    });

    await t.step(
      "a certificate for another name, or from an unknown CA, is refused (retried), naming no host",
      async () => {
        const otherName = await brokerFailure(
          open(tlsServer.port, { token }, { secure: true, host: "other.test", ca }),
        );
        assert.equal(otherName.permanent, false);
        assert.match(
          otherName.message,
          /^TLS: the broker's certificate was not accepted \(ERR_TLS_CERT_ALTNAME_INVALID\)$/,
        );
        assertSafe(otherName.message, "other.test", "hooks.test", token);

        const unknownCa = await brokerFailure(open(tlsServer.port, { token }, { secure: true, host: "hooks.test" }));
        assert.equal(unknownCa.permanent, false);
        assert.match(unknownCa.message, /^TLS: the broker's certificate was not accepted/);
      },
    );

    await t.step("a wrong token is permanent", async () => {
      const f = await brokerFailure(
        open(tlsServer.port, { token: "tok_wrong" }, { secure: true, host: "hooks.test", ca }),
      );
      assert.equal(f.permanent, true);
      assert.match(f.message, /^access refused/);
      assertSafe(f.message, "tok_wrong", token);
    });
  } finally {
    for (const c of conns) await c.close();
    await plain.stop();
    await tlsServer.stop();
  }
});

Deno.test("NATS JetStream transport: the consumer recipe of docs/webhooks.md verifies what the transport publishes", async () => {
  const block = await docsRecipe("nats_consumer.ts");
  const dir = await Deno.makeTempDir({ prefix: "nats_recipe_" });
  await Deno.writeTextFile(`${dir}/nats_consumer.ts`, block);

  const nc = await connect({ servers: `127.0.0.1:${SHARED_PORT}` });
  const jsm = await jetstreamManager(nc);
  const stream = await tempStream(jsm);
  const secret = secretHex();
  const connection = await open(SHARED_PORT);
  try {
    const good = [signed(secret, "identified"), signed(secret, "wire_sent"), signed(secret, "identified")];
    const forged = signed(secretHex(), "identified");
    for (const m of [good[0], forged, good[1], good[2]]) {
      await connection.publish({ subject: `${stream.prefix}.{type}` }, m, new AbortController().signal);
    }
    const run = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "--quiet", "--no-lock", `${dir}/nats_consumer.ts`],
      cwd: dir,
      env: {
        NATS_URL: `nats://127.0.0.1:${SHARED_PORT}`,
        NATS_STREAM: stream.name,
        NATS_CONSUMER: `recipe_${suffix()}`,
        WEBHOOK_SECRET: secret,
        MESSAGE_LIMIT: "4",
      },
      stdout: "piped",
      stderr: "piped",
      signal: AbortSignal.timeout(12_000),
    }).output();
    const out = new TextDecoder().decode(run.stdout);
    assert.equal(run.code, 0, new TextDecoder().decode(run.stderr));
    assert.deepEqual(out.trim().split("\n"), [
      `verified ${good[0].id} ${stream.prefix}.identified`,
      `rejected ${forged.id}`,
      `verified ${good[1].id} ${stream.prefix}.wire_sent`,
      `verified ${good[2].id} ${stream.prefix}.identified`,
    ]);
  } finally {
    await connection.close();
    await stream.remove();
    await nc.close();
    await Deno.remove(dir, { recursive: true });
  }
});
