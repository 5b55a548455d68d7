/**
 * The MQTT transport against the Mosquitto on 127.0.0.1:1883: what a subscriber of the topic receives, how a broker
 * that goes away or refuses shows in the failure, TLS through a relay, and the consumer recipe of docs/webhooks.md run
 * as written. Refusals (bad credentials, a topic the access rules forbid) come from a Mosquitto of this file's own,
 * with a password file and an access list, since the shared broker takes anyone.
 */
import assert from "node:assert/strict";
import net from "node:net";
import { pbkdf2Sync, randomBytes } from "node:crypto";
import mqtt from "mqtt";
import { Webhook } from "standardwebhooks";
import { ErrorBag } from "../../../domain/basics/errors.ts";
import {
  type BrokerConnection,
  BrokerFailure,
  type BrokerTarget,
} from "../../../domain/webhooks/destinations/transport.ts";
import { mqttTransport } from "../../../domain/webhooks/destinations/mqtt.ts";
import { startTcpProxy } from "../../support/tcp_proxy.ts";
import { accepts, freePort } from "../../support/free_port.ts";
import { eventually } from "../../support/helpers.ts";
import { docsRecipe, signedDelivery } from "../../support/broker_messages.ts";

const BROKER_PORT = 1883;
const TLS_DIR = new URL("../../fixtures/tls/", import.meta.url);
const SECRET = randomBytes(32).toString("hex");

const unique = () => crypto.randomUUID().slice(0, 8);
const target = (port: number, over: Partial<BrokerTarget> = {}): BrokerTarget => ({
  transport: "mqtt",
  secure: false,
  host: "broker.test",
  port,
  path: "",
  ...over,
});
const connectTo = (t: BrokerTarget, credentials: { username: string; password: string } | null = null, ca?: string[]) =>
  mqttTransport.connect(t, credentials, {
    address: "127.0.0.1",
    clientId: `hooks-test-${unique()}`,
    timeoutMs: 2000,
    ca,
  });
const signal = () => AbortSignal.timeout(2000);

/** A delivery as the engine builds it: the signed body and every header an HTTP request would carry. */
const signedMessage = (type = "transaction.identified", n = 0) =>
  signedDelivery(SECRET, type, { n, data: { amount: "125.40", currency: "BRL" } });

type Received = { topic: string; body: string; headers: Record<string, string>; contentType?: string };

/** A QoS 1 subscriber of `topic` on the shared broker, keeping what arrives. */
async function subscriber(topic: string) {
  const client = await mqtt.connectAsync({
    host: "127.0.0.1",
    port: BROKER_PORT,
    protocolVersion: 5,
    clientId: `hooks-sub-${unique()}`,
    reconnectPeriod: 0,
  });
  const received: Received[] = [];
  client.on("message", (topic, payload, packet) => {
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(packet.properties?.userProperties ?? {})) {
      headers[k] = Array.isArray(v) ? v.join(", ") : v;
    }
    received.push({ topic, body: payload.toString(), headers, contentType: packet.properties?.contentType });
  });
  await client.subscribeAsync(topic, { qos: 1 });
  return {
    received,
    arrived: (count: number) => eventually(`${count} message(s) on ${topic}`, () => received.length >= count, 3000, 10),
    close: () => client.endAsync(),
  };
}

/**
 * A Mosquitto of this test's own, on a free port: user `hooks` (password `right-password`) may publish under
 * `allowed/` only, and nobody else may connect. Its password file is written in Mosquitto's own form (PBKDF2-SHA512).
 */
async function privateMosquitto() {
  const dir = await Deno.makeTempDir({ prefix: "mqtt_test_" });
  // Mosquitto started as root reads its files as its own user.
  await Deno.chmod(dir, 0o755);
  const salt = randomBytes(12);
  const hash = pbkdf2Sync("right-password", salt, 101, 64, "sha512");
  const port = freePort();
  const files = {
    passwd: `hooks:$7$101$${salt.toString("base64")}$${hash.toString("base64")}\n`,
    acl: "user hooks\ntopic write allowed/#\n",
    "mosquitto.conf": [
      `listener ${port} 127.0.0.1`,
      "allow_anonymous false",
      `password_file ${dir}/passwd`,
      `acl_file ${dir}/acl`,
      "persistence false",
      "log_dest none",
    ].join("\n") + "\n",
  };
  for (const [name, text] of Object.entries(files)) {
    await Deno.writeTextFile(`${dir}/${name}`, text, { mode: 0o644 });
  }
  const child = new Deno.Command("mosquitto", { args: ["-c", `${dir}/mosquitto.conf`], stdout: "null", stderr: "null" })
    .spawn();
  await eventually("the private Mosquitto listening", () => accepts(port), 5000, 20);
  return {
    port,
    close: async () => {
      child.kill("SIGTERM");
      await child.status;
      await Deno.remove(dir, { recursive: true });
    },
  };
}

/**
 * A broker that answers by script, for the reason codes Mosquitto does not send: CONNACK `connack` to a CONNECT (none
 * when null), then PUBACK `puback` to every PUBLISH. It reads just enough of MQTT 5's framing for that.
 */
async function scriptedBroker(connack: number | null, puback = 0) {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on("error", () => {});
    let buffered = Buffer.alloc(0);
    socket.on("data", (chunk) => {
      buffered = Buffer.concat([buffered, chunk]);
      while (buffered.length > 1) {
        let length = 0, at = 1, byte = 0x80;
        while ((byte & 0x80) && at < buffered.length) {
          byte = buffered[at];
          length += (byte & 0x7f) * 128 ** (at - 1);
          at++;
        }
        if ((byte & 0x80) || at + length > buffered.length) return; // the rest of the packet is still on its way
        const type = buffered[0] >> 4;
        const body = buffered.subarray(at, at + length);
        buffered = buffered.subarray(at + length);
        if (type === 1 && connack !== null) socket.write(Buffer.from([0x20, 3, 0, connack, 0]));
        if (type === 3) {
          const id = body.readUInt16BE(2 + body.readUInt16BE(0));
          socket.write(Buffer.from([0x40, 4, id >> 8, id & 0xff, puback, 0]));
        }
      }
    });
  });
  await new Promise<void>((resolve) => server.listen({ host: "127.0.0.1", port: 0 }, resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Lines of a child's stdout as they come. */
async function* lines(stream: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let rest = "";
  for await (const chunk of stream) {
    rest += decoder.decode(chunk, { stream: true });
    let at;
    while ((at = rest.indexOf("\n")) >= 0) {
      yield rest.slice(0, at);
      rest = rest.slice(at + 1);
    }
  }
  if (rest) yield rest;
}

const assertSafe = (failure: BrokerFailure, ...secrets: (string | number)[]) => {
  for (const secret of ["127.0.0.1", ...secrets]) assert.ok(!failure.message.includes(String(secret)), failure.message);
};

Deno.test("MQTT transport: deliveries as MQTT 5 messages on the shared Mosquitto", async (t) => {
  const open: BrokerConnection[] = [];
  const connect = async (...args: Parameters<typeof connectTo>) => {
    const connection = await connectTo(...args);
    open.push(connection);
    return connection;
  };
  try {
    await t.step(
      "a message arrives with its body and every header intact, and verifies with standardwebhooks",
      async () => {
        const base = `hooks-test/${unique()}`;
        const sub = await subscriber(`${base}/#`);
        const connection = await connect(target(BROKER_PORT));
        const message = signedMessage();
        const ack = await connection.publish({ topic: `${base}/{type}` }, message, signal());
        assert.equal(ack.answer, "PUBACK 0x00 success");
        await sub.arrived(1);
        const [got] = sub.received;
        assert.equal(got.topic, `${base}/transaction.identified`);
        assert.equal(got.body, message.body);
        assert.deepEqual(got.headers, message.headers);
        assert.equal(got.contentType, "application/json");
        assert.deepEqual(
          new Webhook(SECRET, { format: "raw" }).verify(got.body, got.headers),
          JSON.parse(message.body),
        );
        await sub.close();
      },
    );

    await t.step("PUBACK 0x10 (no subscriber) counts as accepted and says so", async () => {
      const connection = await connect(target(BROKER_PORT));
      const ack = await connection.publish({ topic: `hooks-test/${unique()}/nobody` }, signedMessage(), signal());
      assert.match(ack.answer, /^PUBACK 0x10 no matching subscribers: the broker took the message/);
    });

    await t.step(
      "30 messages published one after another arrive once each, in order, over one connection",
      async () => {
        const relay = await startTcpProxy(BROKER_PORT);
        const topic = `hooks-test/${unique()}/seq`;
        const sub = await subscriber(topic);
        try {
          const connection = await connect(target(relay.port));
          const sent: string[] = [];
          for (let n = 0; n < 30; n++) {
            const message = signedMessage("transaction.identified", n);
            await connection.publish({ topic }, message, signal());
            sent.push(message.id);
          }
          await sub.arrived(30);
          await new Promise((r) => setTimeout(r, 50)); // a duplicate would come right behind
          assert.deepEqual(sub.received.map((m) => m.headers["webhook-id"]), sent);
          assert.equal(relay.connections(), 1);
          assert.equal(connection.open, true);
        } finally {
          await sub.close();
          await relay.close();
        }
      },
    );

    await t.step(
      "a relay cut fails the publish (retried, open false); after restore a new connection publishes",
      async () => {
        const proxy = await startTcpProxy(BROKER_PORT);
        const topic = `hooks-test/${unique()}/cut`;
        try {
          const connection = await connect(target(proxy.port));
          await connection.publish({ topic }, signedMessage(), signal());
          await proxy.cut();
          const failure = await connection.publish({ topic }, signedMessage(), signal()).then(
            () => assert.fail("published through a cut relay"),
            (e) => e,
          );
          assert.ok(failure instanceof BrokerFailure, String(failure));
          assert.equal(failure.permanent, false);
          assert.match(failure.message, /^connection lost/);
          assertSafe(failure, proxy.port);
          assert.equal(connection.open, false);

          const refused = await connectTo(target(proxy.port)).then(() => assert.fail("connected"), (e) => e);
          assert.ok(refused instanceof BrokerFailure);
          assert.equal(refused.message, "connection refused (ECONNREFUSED)");
          assert.equal(refused.permanent, false);

          await proxy.restore();
          const sub = await subscriber(topic);
          const again = await connect(target(proxy.port));
          const message = signedMessage();
          assert.equal((await again.publish({ topic }, message, signal())).answer, "PUBACK 0x00 success");
          await sub.arrived(1);
          assert.equal(sub.received[0].headers["webhook-id"], message.id);
          await sub.close();
        } finally {
          await proxy.close();
        }
      },
    );

    await t.step("a publish rejects when its signal aborts, and the connection stays usable", async () => {
      const connection = await connect(target(BROKER_PORT));
      const topic = `hooks-test/${unique()}/abort`;
      const controller = new AbortController();
      const pending = connection.publish({ topic }, signedMessage(), controller.signal);
      controller.abort();
      await assert.rejects(pending, (e) => e instanceof BrokerFailure && /^aborted/.test(e.message) && !e.permanent);
      await assert.rejects(
        connection.publish({ topic }, signedMessage(), AbortSignal.abort()),
        (e) => e instanceof BrokerFailure && /^aborted/.test(e.message),
      );
      assert.equal((await connection.publish({ topic }, signedMessage(), signal())).answer.startsWith("PUBACK"), true);

      // a broker that takes the message and never answers: the attempt's timeout ends the wait
      const relay = await startTcpProxy(BROKER_PORT);
      try {
        const silent = await connect(target(relay.port));
        relay.hold();
        const started = Date.now();
        await assert.rejects(
          silent.publish({ topic }, signedMessage(), AbortSignal.timeout(150)),
          (e) => e instanceof BrokerFailure && /^timeout/.test(e.message) && !e.permanent,
        );
        assert.ok(Date.now() - started < 1000);
      } finally {
        await relay.close();
      }
    });

    await t.step(
      "mqtts through a TLS relay: verified against the given authority and the URL's host name",
      async () => {
        const tlsOpts = {
          cert: await Deno.readTextFile(new URL("hooks.test.pem", TLS_DIR)),
          key: await Deno.readTextFile(new URL("hooks.test.key", TLS_DIR)),
        };
        const ca = [await Deno.readTextFile(new URL("ca.pem", TLS_DIR))];
        const proxy = await startTcpProxy(BROKER_PORT, { tls: tlsOpts });
        const topic = `hooks-test/${unique()}/tls`;
        const sub = await subscriber(topic);
        try {
          const secure = target(proxy.port, { secure: true, host: "hooks.test" });
          const connection = await connect(secure, null, ca);
          const message = signedMessage();
          assert.equal((await connection.publish({ topic }, message, signal())).answer, "PUBACK 0x00 success");
          await sub.arrived(1);
          assert.deepEqual(sub.received[0].headers, message.headers);

          // the default authorities do not know the test CA; another name does not match the certificate
          for (const [t, authorities] of [[secure, undefined], [{ ...secure, host: "other.test" }, ca]] as const) {
            const failure = await connectTo(t, null, authorities ? [...authorities] : undefined).then(
              () => assert.fail("connected"),
              (e) => e,
            );
            assert.ok(failure instanceof BrokerFailure, String(failure));
            assert.match(failure.message, /^TLS: the broker's certificate was not accepted \([A-Z_]+\)$/);
            assert.equal(failure.permanent, false);
            assertSafe(failure, "other.test", "hooks.test", proxy.port);
          }
        } finally {
          await sub.close();
          await proxy.close();
        }
      },
    );

    await t.step("the consumer recipe of docs/webhooks.md, run as written, verifies each message", async () => {
      const dir = await Deno.makeTempDir({ prefix: "mqtt_recipe_" });
      await Deno.writeTextFile(`${dir}/mqtt_consumer.ts`, await docsRecipe("mqtt_consumer.ts"));
      const topic = `hooks-test/${unique()}`;
      const child = new Deno.Command(Deno.execPath(), {
        args: ["run", "-A", "mqtt_consumer.ts"],
        cwd: dir,
        env: {
          MQTT_URL: `mqtt://127.0.0.1:${BROKER_PORT}`,
          MQTT_TOPIC: `${topic}/#`,
          WEBHOOK_SECRET: SECRET,
          MESSAGE_COUNT: "3",
          MQTT_CLIENT_ID: `hooks-recipe-${unique()}`,
          MQTT_SESSION_EXPIRY: "0",
        },
        stdout: "piped",
        stderr: "piped",
      }).spawn();
      const kill = setTimeout(() => child.kill(), 10_000);
      try {
        const out = lines(child.stdout);
        assert.equal((await out.next()).value, `listening on ${topic}/#`);
        const connection = await connect(target(BROKER_PORT));
        const sent = [signedMessage("transaction.identified"), signedMessage("transaction.settled")];
        for (const message of sent) await connection.publish({ topic: `${topic}/{type}` }, message, signal());
        const forged = { ...signedMessage("transaction.settled"), body: '{"forged":true}' };
        await connection.publish({ topic: `${topic}/{type}` }, forged, signal());
        const printed: string[] = [];
        for await (const line of out) printed.push(line);
        const status = await child.status;
        const errors = await new Response(child.stderr).text();
        assert.deepEqual(printed, sent.map((m) => `verified ${m.id} ${m.type} on ${topic}/${m.type}`));
        assert.match(errors, new RegExp(`rejected a message on ${topic}/transaction.settled`));
        assert.equal(status.code, 0, errors);
      } finally {
        clearTimeout(kill);
        await Deno.remove(dir, { recursive: true });
      }
    });

    await t.step("the broker's refusals are permanent: bad credentials, a topic the access rules forbid", async () => {
      const broker = await privateMosquitto();
      try {
        for (const credentials of [{ username: "hooks", password: "wrong-password" }, null]) {
          const failure = await connectTo(target(broker.port), credentials).then(
            () => assert.fail("connected"),
            (e) => e,
          );
          assert.ok(failure instanceof BrokerFailure, String(failure));
          assert.equal(failure.permanent, true);
          assert.match(
            failure.message,
            /^access refused: the broker rejected the credentials \(CONNACK 0x8[67] [a-z ]+\)$/,
          );
          assertSafe(failure, "wrong-password", broker.port);
        }
        const connection = await connect(target(broker.port), { username: "hooks", password: "right-password" });
        const ok = await connection.publish({ topic: `allowed/${unique()}` }, signedMessage(), signal());
        assert.match(ok.answer, /^PUBACK 0x(00|10) /);
        const denied = await connection.publish({ topic: `payments/{type}` }, signedMessage(), signal()).then(
          () => assert.fail("published"),
          (e) => e,
        );
        assert.ok(denied instanceof BrokerFailure, String(denied));
        assert.equal(denied.permanent, true);
        assert.equal(
          denied.message,
          "not authorized: the broker refused publishing to payments/transaction.identified (PUBACK 0x87)",
        );
        assert.equal(connection.open, true, "a refused topic leaves the connection to others");
        // an event type that would make the topic a wildcard is refused before it is sent
        const wild = await connection.publish({ topic: "allowed/{type}" }, signedMessage("a/+"), signal()).then(
          () => assert.fail("published"),
          (e) => e,
        );
        assert.ok(wild instanceof BrokerFailure && wild.permanent && /^topic name invalid/.test(wild.message));
      } finally {
        await broker.close();
      }
    });

    await t.step(
      "reason codes by script: which refusals are permanent, which are retried; a silent broker times out",
      async () => {
        const refuse = async (connack: number | null, timeoutMs = 2000) => {
          const broker = await scriptedBroker(connack);
          try {
            const options = { address: "127.0.0.1", clientId: `hooks-test-${unique()}`, timeoutMs };
            return await mqttTransport.connect(target(broker.port), null, options).then(
              () => assert.fail("connected"),
              (e) => e as BrokerFailure,
            );
          } finally {
            await broker.close();
          }
        };
        const badPassword = await refuse(0x86);
        assert.equal(badPassword.permanent, true);
        assert.equal(
          badPassword.message,
          "access refused: the broker rejected the credentials (CONNACK 0x86 bad user name or password)",
        );
        const busy = await refuse(0x89);
        assert.equal(busy.permanent, false);
        assert.equal(busy.message, "the broker refused the connection (CONNACK 0x89 server busy)");
        const started = Date.now();
        const silent = await refuse(null, 200);
        assert.equal(silent.permanent, false);
        assert.match(silent.message, /^timeout: the broker did not answer within 200 ms$/);
        assert.ok(Date.now() - started < 1000);

        for (
          const [code, permanent, text] of [
            [0x90, true, "topic name invalid: the broker refused t/x (PUBACK 0x90)"],
            [0x97, false, "the broker refused the message: quota exceeded (PUBACK 0x97)"],
            [0x80, false, "the broker refused the message: unspecified error (PUBACK 0x80)"],
          ] as const
        ) {
          const broker = await scriptedBroker(0, code);
          try {
            const connection = await connect(target(broker.port));
            const failure = await connection.publish({ topic: "t/x" }, signedMessage(), signal()).then(
              () => assert.fail("published"),
              (e) => e,
            );
            assert.ok(failure instanceof BrokerFailure, String(failure));
            assert.equal(failure.message, text);
            assert.equal(failure.permanent, permanent);
            assert.equal(connection.open, true);
            await connection.close();
          } finally {
            await broker.close();
          }
        }
      },
    );

    await t.step("checkDestination refuses bad topics under destination.topic; the URL takes no path", () => {
      const refusal = (destination: Record<string, unknown>) => {
        const errors = new ErrorBag();
        mqttTransport.checkDestination(errors, destination);
        return errors.errors;
      };
      assert.deepEqual(refusal({ topic: "payments/{type}" }), {});
      assert.deepEqual(refusal({}), { destination: { topic: ["can't be blank"] } });
      assert.deepEqual(refusal({ topic: "  " }), { destination: { topic: ["can't be blank"] } });
      for (const topic of [42, "a".repeat(256), "payments/+", "payments/#", "pay\0ments", "$SYS/x", "a\uD800b"]) {
        const errors = refusal({ topic }) as { destination?: { topic?: string[] } };
        assert.equal(errors.destination?.topic?.length, 1, `${JSON.stringify(topic)} refused`);
      }
      assert.deepEqual(mqttTransport.storedDestination({ topic: "payments/{type}" }), { topic: "payments/{type}" });
      assert.equal(
        mqttTransport.describe({ topic: "payments/{type}" }, "pay.identified"),
        "topic payments/pay.identified",
      );

      for (const [path, ok] of [["", true], ["/", true], ["/payments", false]] as const) {
        const errors = new ErrorBag();
        assert.equal(mqttTransport.parsePath(errors, path), "");
        assert.equal(errors.empty, ok, path);
        if (!ok) assert.ok(errors.errors.url);
      }
      assert.deepEqual(mqttTransport.schemes, { plain: "mqtt", tls: "mqtts" });
      assert.equal(mqttTransport.defaultPort(true), 8883);
      assert.equal(mqttTransport.defaultPort(false), 1883);
    });
  } finally {
    await Promise.all(open.map((c) => c.close()));
  }
  for (const connection of open) assert.equal(connection.open, false);
});
