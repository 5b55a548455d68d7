/**
 * The broker connections of a process (domain/webhooks/engine/broker_connections.ts), with a fake transport that counts
 * what it is asked: one connection per company, broker and credentials, reused; opened again after a failure; closed
 * when idle; capped per company; and every (re)connect through the address guard.
 */
import assert from "node:assert/strict";
import { BrokerConnections } from "../../../domain/webhooks/engine/broker_connections.ts";
import {
  type BrokerConnection,
  BrokerFailure,
  type BrokerTarget,
  type ConnectOptions,
  type Transport,
} from "../../../domain/webhooks/destinations/transport.ts";
import { BlockedDestination } from "../../../domain/webhooks/endpoints/url_guard.ts";

/** A transport whose connections publish at once (or hang while `hold` is set), recording each connect. */
function fakeTransport() {
  const connects: ConnectOptions[] = [];
  const open: FakeConnection[] = [];
  type FakeConnection = BrokerConnection & { open: boolean; closed: boolean; die(): void };
  let hold: Promise<void> | null = null;
  const transport = {
    name: "redis",
    connect: (_target: BrokerTarget, _credentials: unknown, opts: ConnectOptions) => {
      connects.push(opts);
      const connection: FakeConnection = {
        open: true,
        closed: false,
        die() {
          this.open = false;
        },
        async publish(_destination, message) {
          if (hold) await hold;
          if (!this.open) throw new BrokerFailure("connection lost");
          return { answer: `ok ${message.id}` };
        },
        close() {
          this.open = false;
          this.closed = true;
          return Promise.resolve();
        },
      };
      open.push(connection);
      return Promise.resolve(connection);
    },
  } as unknown as Transport;
  return {
    transport,
    connects,
    connections: open,
    holdWhile: (p: Promise<void> | null) => hold = p,
  };
}

const target = (host = "127.0.0.1", port = 6379): BrokerTarget => ({
  transport: "redis",
  secure: false,
  host,
  port,
  path: "0",
});
const message = (id: string) => ({ id, type: "identified", body: "{}", headers: {} });
const never = new AbortController().signal;

function keeper(fake: ReturnType<typeof fakeTransport>, opts: { perCompany?: number; idleMs?: number } = {}) {
  return new BrokerConnections({
    allowPrivateUrls: true,
    connectTimeoutMs: 1000,
    processId: "0123456789abcdef",
    transports: { redis: fake.transport },
    resolve: () => Promise.resolve(["127.0.0.1"]),
    ...opts,
  });
}

Deno.test("broker connections of a process", async (t) => {
  await t.step("one connection per company, broker and credentials, reused by every publish", async () => {
    const fake = fakeTransport();
    const brokers = keeper(fake);
    const user = { username: "u", password: "p" };
    for (let i = 0; i < 5; i++) await brokers.publish("a", target(), user, {}, message(`m${i}`), never);
    assert.equal(fake.connects.length, 1);
    await brokers.publish("b", target(), user, {}, message("other company"), never);
    await brokers.publish("a", target(), { username: "u", password: "other" }, {}, message("other user"), never);
    await brokers.publish("a", target("127.0.0.1", 6380), user, {}, message("other port"), never);
    assert.equal(fake.connects.length, 4);
    // unique client ids, named after the process
    assert.equal(new Set(fake.connects.map((c) => c.clientId)).size, 4);
    assert.ok(fake.connects.every((c) => c.clientId.startsWith("payments-01234567-")));
    await brokers.close();
    assert.ok(fake.connections.every((c) => c.closed));
  });

  await t.step("a connection that died is dropped, and the next publish opens another", async () => {
    const fake = fakeTransport();
    const brokers = keeper(fake);
    await brokers.publish("a", target(), null, {}, message("1"), never);
    fake.connections[0].die();
    await assert.rejects(brokers.publish("a", target(), null, {}, message("2"), never), BrokerFailure);
    assert.equal((await brokers.publish("a", target(), null, {}, message("3"), never)).answer, "ok 3");
    assert.equal(fake.connects.length, 2);
    await brokers.close();
  });

  await t.step("an idle connection is closed", async () => {
    const fake = fakeTransport();
    const brokers = keeper(fake, { idleMs: 100 });
    await brokers.publish("a", target(), null, {}, message("1"), never);
    await new Promise((r) => setTimeout(r, 250));
    assert.equal(brokers.size("a"), 0);
    assert.ok(fake.connections[0].closed);
    await brokers.close();
  });

  await t.step("a company has at most its cap open: the idle one goes, none idle refuses", async () => {
    const fake = fakeTransport();
    const brokers = keeper(fake, { perCompany: 2 });
    await brokers.publish("a", target("127.0.0.1", 1), null, {}, message("1"), never);
    await brokers.publish("a", target("127.0.0.1", 2), null, {}, message("2"), never);
    await brokers.publish("a", target("127.0.0.1", 3), null, {}, message("3"), never);
    assert.equal(brokers.size("a"), 2);
    assert.ok(fake.connections[0].closed, "the least recently used went");
    let release = () => {};
    fake.holdWhile(new Promise<void>((r) => release = r));
    const busy = [2, 3].map((port) => brokers.publish("a", target("127.0.0.1", port), null, {}, message("b"), never));
    await assert.rejects(
      brokers.publish("a", target("127.0.0.1", 4), null, {}, message("4"), never),
      /the company's 2 broker connections of this instance are all in use/,
    );
    // another company is not held back by this one's cap
    const other = brokers.publish("b", target("127.0.0.1", 4), null, {}, message("5"), never);
    release();
    fake.holdWhile(null);
    await Promise.all([...busy, other]);
    await brokers.close();
  });

  await t.step("every (re)connect passes the address guard", async () => {
    const fake = fakeTransport();
    const brokers = new BrokerConnections({
      allowPrivateUrls: false,
      connectTimeoutMs: 1000,
      processId: "p",
      transports: { redis: fake.transport },
      resolve: () => Promise.resolve(["10.0.0.7"]),
    });
    await assert.rejects(
      brokers.publish("a", target("broker.example.com"), null, {}, message("1"), never),
      (err) => err instanceof BlockedDestination && /private address/.test(err.message),
    );
    assert.equal(fake.connects.length, 0);
    await brokers.close();
  });
});
