/**
 * The Redis Streams transport against the Redis on 127.0.0.1:6379: what a consumer of the stream reads (the body and
 * every header, verifiable with standardwebhooks), order, one connection for many publishes, a broker that goes
 * away, permanent refusals, TLS, aborts, the destination's checks, and the consumer recipe of docs/webhooks.md.
 */
import assert from "node:assert/strict";
import net from "node:net";
import { Redis } from "ioredis";
import { Webhook } from "standardwebhooks";
import { ErrorBag } from "../../../domain/basics/errors.ts";
import { type BrokerTarget } from "../../../domain/webhooks/destinations/transport.ts";
import { redisTransport } from "../../../domain/webhooks/destinations/redis.ts";
import { startTcpProxy } from "../../support/tcp_proxy.ts";
import { brokerFailure, docsRecipe, signedDelivery } from "../../support/broker_messages.ts";

const REDIS_PORT = 6379;
const fixture = (name: string) => Deno.readTextFileSync(new URL(`../../fixtures/tls/${name}`, import.meta.url));
const run = crypto.randomUUID().slice(0, 8);
const secret = [...crypto.getRandomValues(new Uint8Array(32))].map((b) => b.toString(16).padStart(2, "0")).join("");

const target = (port: number, opts: Partial<BrokerTarget> = {}): BrokerTarget => ({
  transport: "redis",
  secure: false,
  host: "127.0.0.1",
  port,
  path: "0",
  ...opts,
});
const options = (opts: { ca?: string[]; timeoutMs?: number } = {}) => ({
  address: "127.0.0.1",
  clientId: `redis-test-${run}`,
  timeoutMs: opts.timeoutMs ?? 2000,
  ...(opts.ca ? { ca: opts.ca } : {}),
});
const never = () => new AbortController().signal;

/** A delivery as the engine makes it, signed with the test's secret. */
const signedMessage = (n: number, type = "identified") =>
  signedDelivery(secret, type, { data: { transaction_id: `tx-${run}-${n}`, amount: "10.50" } });

/** The stream's entries as a consumer reads them: the id, then the fields in order. */
async function entries(reader: Redis, key: string): Promise<[string, string[]][]> {
  return await reader.xrange(key, "-", "+") as [string, string[]][];
}

Deno.test("Redis Streams transport: a delivery becomes one stream entry a consumer verifies", async (t) => {
  const reader = new Redis({ host: "127.0.0.1", port: REDIS_PORT, lazyConnect: true });
  await reader.connect();
  const keys: string[] = [];
  const key = (name: string) => {
    const k = `hooks-test:${run}:${name}`;
    keys.push(k);
    return k;
  };

  try {
    await t.step("the entry holds the body, then every header, and verifies with standardwebhooks", async () => {
      const connection = await redisTransport.connect(target(REDIS_PORT), null, options());
      try {
        const stream = key("one.identified");
        const message = signedMessage(1);
        const ack = await connection.publish(
          { stream: `hooks-test:${run}:one.{type}`, maxlen: 1000 },
          message,
          never(),
        );
        const [[id, fields]] = await entries(reader, stream);
        assert.equal(ack.answer, `XADD id ${id}`);
        assert.match(ack.answer, /^XADD id \d+-\d+$/);
        assert.deepEqual(fields, ["body", message.body, ...Object.entries(message.headers).flat()]);

        const headers = Object.fromEntries(Object.entries(message.headers));
        const received = Object.fromEntries(
          fields.slice(2).flatMap((v, i, all) => i % 2 ? [] : [[v, all[i + 1]]]),
        );
        assert.deepEqual(received, headers);
        assert.deepEqual(new Webhook(secret, { format: "raw" }).verify(fields[1], received), JSON.parse(message.body));
        assert.throws(() => new Webhook("0".repeat(64), { format: "raw" }).verify(fields[1], received));
      } finally {
        await connection.close();
      }
      assert.equal(connection.open, false);
    });

    await t.step("30 publishes, each awaited, arrive in order once each over one connection", async () => {
      const relay = await startTcpProxy(REDIS_PORT);
      const connection = await redisTransport.connect(target(relay.port), null, options());
      try {
        const stream = key("ordered");
        const sent = Array.from({ length: 30 }, (_, n) => signedMessage(n));
        const answers: string[] = [];
        for (const message of sent) answers.push((await connection.publish({ stream }, message, never())).answer);
        const got = await entries(reader, stream);
        assert.deepEqual(got.map(([, fields]) => fields[1]), sent.map((m) => m.body));
        assert.deepEqual(got.map(([id]) => `XADD id ${id}`), answers);
        assert.equal(relay.connections(), 1);
        assert.equal(connection.open, true);
      } finally {
        await connection.close();
        await relay.close();
      }
    });

    await t.step(
      "a cut relay fails the publish (retried, open false); after restore a new connection publishes",
      async () => {
        const proxy = await startTcpProxy(REDIS_PORT);
        const stream = key("cut");
        try {
          const connection = await redisTransport.connect(target(proxy.port), null, options());
          await connection.publish({ stream }, signedMessage(1), never());
          await proxy.cut();
          const lost = await brokerFailure(connection.publish({ stream }, signedMessage(2), never()));
          assert.equal(lost.permanent, false);
          assert.match(lost.message, /^connection (lost|reset)/);
          assert.equal(connection.open, false);
          await connection.close();

          const refused = await brokerFailure(redisTransport.connect(target(proxy.port), null, options()));
          assert.equal(refused.permanent, false);
          assert.equal(refused.message, "connection refused (ECONNREFUSED)");

          await proxy.restore();
          const again = await redisTransport.connect(target(proxy.port), null, options());
          await again.publish({ stream }, signedMessage(3), never());
          await again.close();
          assert.equal((await entries(reader, stream)).length, 2);
        } finally {
          await proxy.close();
        }
      },
    );

    await t.step(
      "a key of another type and refused credentials are permanent, naming no address or password",
      async () => {
        const stream = key("a-string");
        await reader.set(stream, "not a stream");
        const connection = await redisTransport.connect(target(REDIS_PORT), null, options());
        try {
          const wrongType = await brokerFailure(connection.publish({ stream }, signedMessage(1), never()));
          assert.equal(wrongType.permanent, true);
          assert.equal(
            wrongType.message,
            `wrong type: the key ${stream} holds a value that is not a stream (WRONGTYPE)`,
          );
          assert.equal(connection.open, true, "a refused command leaves the connection usable");
        } finally {
          await connection.close();
        }

        const password = `pw-${crypto.randomUUID()}`;
        const refused = await brokerFailure(
          redisTransport.connect(target(REDIS_PORT), { username: `nobody-${run}`, password }, options()),
        );
        assert.equal(refused.permanent, true);
        assert.equal(refused.message, "access refused: the broker rejected the credentials (WRONGPASS)");
        for (const f of [refused]) assert.ok(!f.message.includes(password) && !f.message.includes("127.0.0.1"));
      },
    );

    await t.step("the default user's credentials and a database from the path are used", async () => {
      const stream = key("db3");
      const connection = await redisTransport.connect(
        target(REDIS_PORT, { path: "3" }),
        { username: "default", password: "any" },
        options(),
      );
      try {
        await connection.publish({ stream }, signedMessage(1), never());
      } finally {
        await connection.close();
      }
      assert.equal(await reader.exists(stream), 0, "not in database 0");
      const db3 = new Redis({ host: "127.0.0.1", port: REDIS_PORT, db: 3, lazyConnect: true });
      await db3.connect();
      try {
        assert.equal(await db3.xlen(stream), 1);
        await db3.del(stream);
      } finally {
        db3.disconnect();
      }
    });

    await t.step("rediss: TLS through a relay, checked against the URL's host name and the given CA", async () => {
      const proxy = await startTcpProxy(REDIS_PORT, {
        tls: { cert: fixture("hooks.test.pem"), key: fixture("hooks.test.key") },
      });
      try {
        const secure = target(proxy.port, { secure: true, host: "hooks.test" });
        const stream = key("tls");
        const connection = await redisTransport.connect(secure, null, options({ ca: [fixture("ca.pem")] }));
        const message = signedMessage(1);
        await connection.publish({ stream }, message, never());
        await connection.close();
        assert.equal((await entries(reader, stream))[0][1][1], message.body);

        const untrusted = await brokerFailure(redisTransport.connect(secure, null, options()));
        assert.equal(untrusted.permanent, false);
        assert.match(untrusted.message, /^TLS/);
        const otherName = await brokerFailure(
          redisTransport.connect({ ...secure, host: "other.test" }, null, options({ ca: [fixture("ca.pem")] })),
        );
        assert.match(otherName.message, /^TLS/);
        assert.ok(!otherName.message.includes("other.test") && !otherName.message.includes("127.0.0.1"));
      } finally {
        await proxy.close();
      }
    });

    await t.step("a publish whose signal aborts rejects at once, and the stuck connection is given up", async () => {
      // a server that accepts and never answers: XADD's reply does not come
      const sockets = new Set<net.Socket>();
      const silent = net.createServer((socket) => {
        sockets.add(socket);
        socket.on("error", () => {});
      });
      await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
      try {
        const port = (silent.address() as net.AddressInfo).port;
        const connection = await redisTransport.connect(target(port), null, options());
        const started = performance.now();
        const timedOut = await brokerFailure(
          connection.publish({ stream: key("silent") }, signedMessage(1), AbortSignal.timeout(150)),
        );
        assert.ok(performance.now() - started < 1000);
        assert.equal(timedOut.permanent, false);
        assert.match(timedOut.message, /^timeout/);
        assert.equal(connection.open, false);
        await connection.close();

        const again = await redisTransport.connect(target(port), null, options());
        const controller = new AbortController();
        const pending = brokerFailure(again.publish({ stream: key("silent") }, signedMessage(2), controller.signal));
        controller.abort();
        assert.match((await pending).message, /^aborted/);
        await again.close();

        const slow = await brokerFailure(
          redisTransport.connect(target(port), { username: "u", password: "p" }, options({ timeoutMs: 200 })),
        );
        assert.equal(slow.message, "timeout: no connection within 200 ms");
      } finally {
        for (const socket of sockets) socket.destroy();
        await new Promise((resolve) => silent.close(resolve));
      }
    });

    await t.step("checkDestination refuses bad destinations naming the key; the URL path is the database", () => {
      const check = (destination: Record<string, unknown>) => {
        const errors = new ErrorBag();
        redisTransport.checkDestination(errors, destination);
        return errors.errors;
      };
      assert.deepEqual(check({ stream: "payments.{type}", maxlen: 100_000 }), {});
      assert.deepEqual(check({ stream: "payments" }), {});
      assert.deepEqual(check({}), { destination: { stream: ["can't be blank"] } });
      assert.deepEqual(check({ stream: "  " }), { destination: { stream: ["can't be blank"] } });
      assert.deepEqual(check({ stream: 12 }), { destination: { stream: ["must be a string"] } });
      assert.deepEqual(check({ stream: "x".repeat(256) }), {
        destination: { stream: ["is too long (maximum is 255 characters)"] },
      });
      assert.deepEqual(check({ stream: "pay\nments" }), {
        destination: { stream: ["must not contain control characters"] },
      });
      for (const maxlen of [0, -1, 1.5, "100", 10_000_001]) {
        assert.deepEqual(check({ stream: "payments", maxlen }), {
          destination: { maxlen: ["must be a whole number from 1 to 10,000,000"] },
        }, `maxlen ${maxlen}`);
      }

      assert.deepEqual(redisTransport.storedDestination({ stream: "payments", maxlen: 500 }), {
        stream: "payments",
        maxlen: 500,
      });
      assert.deepEqual(redisTransport.storedDestination({ stream: "payments" }), { stream: "payments" });
      assert.equal(redisTransport.describe({ stream: "pay.{type}" }, "identified"), "stream pay.identified");
      assert.equal(
        redisTransport.describe({ stream: "pay", maxlen: 500 }),
        "stream pay (trimmed to about 500 entries)",
      );

      for (const [path, db] of [["", "0"], ["/", "0"], ["/0", "0"], ["/7", "7"], ["/15", "15"]]) {
        const errors = new ErrorBag();
        assert.equal(redisTransport.parsePath(errors, path), db);
        assert.ok(errors.empty, path);
      }
      for (const path of ["/16", "/01", "/a", "/0/x", "/-1"]) {
        const errors = new ErrorBag();
        redisTransport.parsePath(errors, path);
        assert.deepEqual(Object.keys(errors.errors), ["url"], path);
      }
      assert.equal(redisTransport.defaultPort(true), 6379);
      assert.equal(redisTransport.defaultPort(false), 6379);
    });

    await t.step("the consumer recipe of docs/webhooks.md reads and verifies every published entry", async () => {
      const file = await Deno.makeTempFile({ suffix: ".ts" });
      await Deno.writeTextFile(file, await docsRecipe("redis_consumer.ts"));
      const stream = key("recipe");
      const consumer = new Deno.Command(Deno.execPath(), {
        args: ["run", "-A", "--quiet", "--no-config", file],
        cwd: await Deno.makeTempDir(),
        env: {
          REDIS_URL: `redis://127.0.0.1:${REDIS_PORT}/0`,
          REDIS_STREAM: stream,
          WEBHOOK_SECRET: secret,
          MESSAGE_COUNT: "4",
        },
        stdout: "piped",
        stderr: "piped",
      }).spawn();
      const killer = setTimeout(() => consumer.kill(), 12_000);
      try {
        const connection = await redisTransport.connect(target(REDIS_PORT), null, options());
        const sent = [signedMessage(1), signedMessage(2, "settled"), signedMessage(3)];
        const forged = signedMessage(4);
        forged.body = forged.body.replace("10.50", "99.50");
        for (const message of [...sent, forged]) await connection.publish({ stream }, message, never());
        await connection.close();

        const { code, stdout, stderr } = await consumer.output();
        const printed = new TextDecoder().decode(stdout).trim().split("\n");
        assert.equal(code, 0, new TextDecoder().decode(stderr));
        assert.deepEqual(printed.slice(0, 3), sent.map((m) => `verified ${m.id} ${m.type}`));
        assert.match(printed[3], /^rejected \d+-\d+: /);
        assert.equal(printed.length, 4);
        assert.equal(await reader.call("XPENDING", stream, "webhooks").then((r) => (r as [number])[0]), 0);
      } finally {
        clearTimeout(killer);
        await Deno.remove(file);
      }
    });
  } finally {
    if (keys.length) await reader.del(...keys);
    reader.disconnect();
  }
});
