/**
 * The RabbitMQ transport against the broker on 127.0.0.1:5672: what an integrator consuming the queue sees (body,
 * headers, order, signatures that verify), which broker answers are retried and which disable the endpoint, the
 * connection's life through a cut relay, amqps through a TLS relay, and the consumer recipe of docs/webhooks.md run
 * as written.
 */
import assert from "node:assert/strict";
import amqp from "amqplib";
import { Webhook } from "standardwebhooks";
import { ErrorBag } from "../../../domain/basics/errors.ts";
import { amqpTransport } from "../../../domain/webhooks/destinations/amqp.ts";
import {
  type BrokerConnection,
  BrokerFailure,
  type BrokerTarget,
  type OutgoingMessage,
} from "../../../domain/webhooks/destinations/transport.ts";
import { standardWebhookHeaders } from "../../../domain/webhooks/endpoints/signature.ts";
import { startTcpProxy } from "../../support/tcp_proxy.ts";
import { brokerFailure, docsRecipe, signedDelivery } from "../../support/broker_messages.ts";

const SECRET = "5f".repeat(32);
const GUEST = { username: "guest", password: "guest" };
const sfx = () => crypto.randomUUID().slice(0, 8);
const target = (port = 5672, over: Partial<BrokerTarget> = {}): BrokerTarget => ({
  transport: "amqp",
  secure: false,
  host: "127.0.0.1",
  port,
  path: "/",
  ...over,
});
const opts = (over: Partial<{ ca: string[]; timeoutMs: number }> = {}) => ({
  address: "127.0.0.1",
  clientId: `amqp-test-${sfx()}`,
  timeoutMs: 3_000,
  ...over,
});
const never = () => new AbortController().signal;

/** A delivery as the engine builds it, signed with SECRET. */
const signed = (type: string, n = 0) => signedDelivery(SECRET, type, { data: { n, note: "ação ✓" } });

Deno.test("RabbitMQ destinations: what a consumer of the queue receives, and what the broker's answers mean", async (t) => {
  const admin = await amqp.connect("amqp://guest:guest@127.0.0.1:5672/%2F");
  const channel = await admin.createChannel();
  const exchange = `hooks-test-${sfx()}`;
  const queue = `hooks-test-q-${sfx()}`;
  await channel.assertExchange(exchange, "topic", { durable: false, autoDelete: false });
  await channel.assertQueue(queue, { durable: false, exclusive: false });
  await channel.bindQueue(queue, exchange, "pay.#");
  const destination = { exchange, routing_key: "pay.{type}" };
  /** The next `count` messages of the queue, waiting a moment for each. */
  const take = async (count: number, from = queue) => {
    const got: amqp.GetMessage[] = [];
    const until = Date.now() + 3_000;
    while (got.length < count && Date.now() < until) {
      const message = await channel.get(from, { noAck: true });
      if (message) got.push(message);
      else await new Promise((r) => setTimeout(r, 20));
    }
    return got;
  };
  const connections: BrokerConnection[] = [];
  const connect = async (...args: Parameters<typeof amqpTransport.connect>) => {
    const c = await amqpTransport.connect(...args);
    connections.push(c);
    return c;
  };
  const conn = await connect(target(), GUEST, opts());

  try {
    await t.step(
      "a message arrives with the body and every header intact, and verifies with standardwebhooks",
      async () => {
        const message = signed("identified");
        const ack = await conn.publish(destination, message, never());
        assert.equal(ack.answer, `confirmed: exchange ${exchange}, key pay.identified`);
        const [got] = await take(1);
        assert.equal(got.content.toString("utf8"), message.body);
        assert.equal(got.fields.routingKey, "pay.identified");
        assert.deepEqual(got.properties.headers, message.headers);
        assert.equal(got.properties.messageId, message.id);
        assert.equal(got.properties.contentType, "application/json");
        assert.equal(got.properties.deliveryMode, 2);
        const webhook = new Webhook(SECRET, { format: "raw" });
        assert.deepEqual(
          webhook.verify(got.content.toString("utf8"), got.properties.headers as Record<string, string>),
          {
            id: message.id,
            type: "identified",
            data: { n: 0, note: "ação ✓" },
          },
        );
        assert.throws(() => webhook.verify(message.body.replace("ação", "acao"), message.headers));
      },
    );

    await t.step("30 publishes, each awaited, arrive in order once each, over one connection", async () => {
      const relay = await startTcpProxy(5672);
      try {
        const one = await connect(target(relay.port), GUEST, opts());
        const sent = Array.from({ length: 30 }, (_, n) => signed("paid", n));
        for (const message of sent) await one.publish(destination, message, never());
        // each was confirmed, so each is in the queue already: nothing more comes
        const got = await take(30);
        assert.deepEqual(got.map((m) => m.properties.messageId), sent.map((m) => m.id));
        assert.equal(await channel.get(queue), false);
        assert.equal(relay.connections(), 1);
        await one.close();
        assert.equal(one.open, false);
      } finally {
        await relay.close();
      }
    });

    await t.step("an unroutable message fails, not permanently, and is told apart from its neighbours", async () => {
      // bound (pay.*) and unbound (other.*) keys interleaved, all in flight at once
      const dest = (bound: boolean) => ({ exchange, routing_key: bound ? "pay.{type}" : "other.{type}" });
      const results = await Promise.allSettled(
        Array.from({ length: 10 }, (_, n) => conn.publish(dest(n % 2 === 0), signed("identified", n), never())),
      );
      results.forEach((result, n) => {
        if (n % 2 === 0) assert.equal(result.status, "fulfilled", `publish ${n}`);
        else {
          assert.equal(result.status, "rejected", `publish ${n}`);
          const reason = (result as PromiseRejectedResult).reason;
          assert.ok(reason instanceof BrokerFailure);
          assert.equal(reason.permanent, false);
          assert.equal(
            reason.message,
            `unroutable: exchange ${exchange} has no queue bound for routing key other.identified`,
          );
        }
      });
      assert.equal((await take(5)).length, 5);

      const lost = await brokerFailure(
        conn.publish({ exchange: "", routing_key: `${queue}-none` }, signed("x"), never()),
      );
      assert.equal(lost.message, `unroutable: the default exchange has no queue bound for routing key ${queue}-none`);
      assert.equal(lost.permanent, false);
      // the default exchange routes to the queue its key names
      await conn.publish({ exchange: "", routing_key: queue }, signed("x"), never());
      assert.equal((await take(1)).length, 1);
      assert.equal(conn.open, true);
    });

    await t.step("no such exchange is permanent, and the same connection publishes on afterwards", async () => {
      const missing = `${exchange}-missing`;
      const gone = await brokerFailure(
        conn.publish({ exchange: missing, routing_key: "k" }, signed("identified"), never()),
      );
      assert.equal(gone.permanent, true);
      assert.equal(gone.message, `not found: there is no exchange ${missing} in the vhost`);
      assert.equal(conn.open, true);
      await conn.publish(destination, signed("identified"), never());

      // in flight together: the broker's close of the channel is permanent only for the exchange it names
      const [bad, good] = await Promise.allSettled([
        conn.publish({ exchange: missing, routing_key: "k" }, signed("a"), never()),
        conn.publish(destination, signed("b"), never()),
      ]);
      assert.equal(bad.status, "rejected");
      assert.equal((bad as PromiseRejectedResult).reason.permanent, true);
      if (good.status === "rejected") assert.equal(good.reason.permanent, false);
      await conn.publish(destination, signed("identified"), never());
      assert.equal((await take(good.status === "fulfilled" ? 3 : 2)).length, good.status === "fulfilled" ? 3 : 2);
    });

    await t.step("wrong credentials and an unknown vhost are permanent at connect", async () => {
      const refused = await brokerFailure(connect(target(), { username: "guest", password: "wrong" }, opts()));
      assert.equal(refused.permanent, true);
      assert.equal(refused.message, "access refused: the broker rejected the credentials");
      const vhost = await brokerFailure(connect(target(5672, { path: `no-vhost-${sfx()}` }), GUEST, opts()));
      assert.equal(vhost.permanent, true);
      assert.equal(vhost.message, "access refused: the vhost does not exist or the user has no access to it");
      const token = await brokerFailure(connect(target(), { token: "t" }, opts()));
      assert.equal(token.permanent, true);
    });

    await t.step(
      "a cut relay fails the publish, not permanently, closes the connection; after restore one reconnects",
      async () => {
        const proxy = await startTcpProxy(5672);
        try {
          const viaProxy = await connect(target(proxy.port), GUEST, opts());
          await viaProxy.publish(destination, signed("identified"), never());
          await proxy.cut();
          const lost = await brokerFailure(viaProxy.publish(destination, signed("identified"), never()));
          assert.equal(lost.permanent, false);
          assert.match(lost.message, /^connection (reset|closed|lost)/);
          assert.equal(viaProxy.open, false);
          assert.doesNotMatch(lost.message, /127\.0\.0\.1|guest/);
          const refused = await brokerFailure(connect(target(proxy.port), GUEST, opts()));
          assert.equal(refused.permanent, false);
          assert.equal(refused.message, "connection refused (ECONNREFUSED)");

          await proxy.restore();
          const again = await connect(target(proxy.port), GUEST, opts());
          await again.publish(destination, signed("identified"), never());
          assert.equal((await take(2)).length, 2);
        } finally {
          await proxy.close();
        }
      },
    );

    await t.step("amqps: TLS to the URL's host name, the certificate checked against the given authority", async () => {
      const dir = new URL("../../fixtures/tls/", import.meta.url);
      const read = (name: string) => Deno.readTextFile(new URL(name, dir));
      const proxy = await startTcpProxy(5672, {
        tls: { cert: await read("hooks.test.pem"), key: await read("hooks.test.key") },
      });
      const ca = [await read("ca.pem")];
      try {
        const secure = target(proxy.port, { secure: true, host: "hooks.test" });
        const tls = await connect(secure, GUEST, opts({ ca }));
        const message = signed("identified");
        await tls.publish(destination, message, never());
        const [got] = await take(1);
        assert.equal(got.properties.messageId, message.id);
        await tls.close();

        const wrongName = await brokerFailure(connect({ ...secure, host: "other.test" }, GUEST, opts({ ca })));
        assert.equal(wrongName.permanent, false);
        assert.match(wrongName.message, /^TLS: the broker.s certificate was not accepted \([A-Z_]+\)$/);
        assert.doesNotMatch(wrongName.message, /other\.test|127\.0\.0\.1/);
        const untrusted = await brokerFailure(connect(secure, GUEST, opts()));
        assert.match(untrusted.message, /^TLS: the broker.s certificate was not accepted \([A-Z_]+\)$/);
      } finally {
        await proxy.close();
      }
    });

    await t.step("a publish whose signal aborts rejects at once; connecting honours its timeout", async () => {
      const relay = await startTcpProxy(5672);
      let late: OutgoingMessage | null = null;
      try {
        const slow = await connect(target(relay.port), GUEST, opts());
        relay.hold(); // the broker's confirm no longer comes through
        const started = Date.now();
        late = signed("identified");
        const timedOut = await brokerFailure(slow.publish(destination, late, AbortSignal.timeout(100)));
        assert.ok(Date.now() - started < 1_000, `rejected after ${Date.now() - started} ms`);
        assert.equal(timedOut.message, "timeout: the broker did not confirm in time");
        assert.equal(timedOut.permanent, false);
        const controller = new AbortController();
        const pending = slow.publish(destination, signed("identified"), controller.signal);
        controller.abort();
        assert.equal((await brokerFailure(pending)).message, "aborted");

        const started2 = Date.now();
        const noAnswer = await brokerFailure(connect(target(relay.port), GUEST, opts({ timeoutMs: 200 })));
        assert.ok(Date.now() - started2 < 1_500, `gave up after ${Date.now() - started2} ms`);
        assert.equal(noAnswer.permanent, false);
        assert.match(noAnswer.message, /time/);
      } finally {
        await relay.close();
        // what timed out was sent all the same, as an attempt that timed out over HTTP may have arrived
        assert.deepEqual((await take(1)).map((m) => m.properties.messageId), [late?.id]);
      }
    });

    await t.step("bad destinations and URLs are refused naming the key", () => {
      const check = (destination: Record<string, unknown>) => {
        const errors = new ErrorBag();
        amqpTransport.checkDestination(errors, destination);
        return errors.errors;
      };
      assert.deepEqual(check({ exchange: "payments", routing_key: "pay.{type}" }), {});
      assert.deepEqual(check({ exchange: "" }), {});
      assert.deepEqual(check({ routing_key: "k" }), { destination: { exchange: ["can't be blank"] } });
      assert.deepEqual(check({ exchange: "x".repeat(256) }), {
        destination: { exchange: ["is too long (maximum is 255 characters)"] },
      });
      assert.deepEqual(check({ exchange: 5 }), {
        destination: { exchange: ['must be a string ("" for the default exchange)'] },
      });
      assert.deepEqual(check({ exchange: "e", routing_key: "k".repeat(201) }), {
        destination: { routing_key: ["is too long (maximum is 200 characters)"] },
      });
      assert.deepEqual(Object.keys(check({ exchange: "pay.{type}", routing_key: "a\nb" }).destination), [
        "exchange",
        "routing_key",
      ]);
      assert.deepEqual(amqpTransport.storedDestination({ exchange: "payments" }), {
        exchange: "payments",
        routing_key: "{type}",
      });
      assert.equal(
        amqpTransport.describe({ exchange: "", routing_key: "{type}" }, "paid"),
        "the default exchange, key paid",
      );

      const path = (pathname: string) => {
        const errors = new ErrorBag();
        return [amqpTransport.parsePath(errors, pathname), errors.errors] as const;
      };
      assert.deepEqual(path(""), ["/", {}]);
      assert.deepEqual(path("/"), ["/", {}]);
      assert.deepEqual(path("/%2F"), ["/", {}]);
      assert.deepEqual(path("/team%2Fpayments"), ["team/payments", {}]);
      assert.deepEqual(Object.keys(path("/team/payments")[1]), ["url"]);
      assert.deepEqual(Object.keys(path("/%E0%A4%A")[1]), ["url"]);
    });

    await t.step("the consumer recipe of docs/webhooks.md verifies every message it reads", async () => {
      const file = await Deno.makeTempFile({ prefix: "amqp_consumer_", suffix: ".ts" });
      await Deno.writeTextFile(file, await docsRecipe("amqp_consumer.ts"));
      const recipeQueue = `${queue}-recipe`;
      await channel.assertQueue(recipeQueue, { durable: false });
      await channel.bindQueue(recipeQueue, exchange, "recipe.#");
      const sent = [signed("identified", 1), signed("paid", 2)];
      const forged = signed("paid", 3);
      forged.headers["webhook-signature"] = standardWebhookHeaders(forged.id, 1, forged.body, ["0".repeat(64)])[
        "webhook-signature"
      ];
      try {
        const dest = { exchange, routing_key: "recipe.{type}" };
        for (const message of [...sent, forged]) await conn.publish(dest, message, never());
        const run = await new Deno.Command(Deno.execPath(), {
          args: ["run", "-A", file],
          env: {
            AMQP_URL: "amqp://guest:guest@127.0.0.1:5672/%2F",
            AMQP_QUEUE: recipeQueue,
            WEBHOOK_SECRET: SECRET,
            MESSAGE_COUNT: "3",
          },
          stdout: "piped",
          stderr: "piped",
          signal: AbortSignal.timeout(10_000),
        }).output();
        const out = new TextDecoder().decode(run.stdout);
        assert.equal(run.code, 0, new TextDecoder().decode(run.stderr));
        assert.deepEqual(out.trim().split("\n"), [
          `verified ${sent[0].id} identified`,
          `verified ${sent[1].id} paid`,
          `rejected ${forged.id}: No matching signature found`,
        ]);
      } finally {
        await Deno.remove(file);
        await channel.deleteQueue(recipeQueue);
      }
    });
  } finally {
    for (const c of connections) await c.close();
    await channel.deleteQueue(queue);
    await channel.deleteExchange(exchange);
    await admin.close();
  }
});
