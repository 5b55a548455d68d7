/**
 * Webhook attempts reuse connections (docs/webhooks.md, "Connections"): one per receiver host and checked address,
 * kept while in use, closed when idle, never shared between hosts, and a connection the receiver dropped fails the
 * attempt that found it without sending the POST twice. TLS is still verified against each host name.
 */
import assert from "node:assert/strict";
import { ConnectionPool } from "../../domain/webhooks/engine/connections.ts";
import { sendWebhook } from "../../domain/webhooks/engine/sender.ts";
import { rawHttpServer } from "../support/raw_http_server.ts";

const fixture = (name: string) => Deno.readTextFileSync(new URL(`../fixtures/tls/${name}`, import.meta.url));
/** A test-only authority and a certificate it issued for `hooks.test` (tests/fixtures/tls/README.md). */
const CA = fixture("ca.pem");
const TLS = { cert: fixture("hooks.test.pem"), key: fixture("hooks.test.key") };
const EXAMPLE = JSON.stringify({ id: "evt", type: "identified", data: {} });
const loopback = () => Promise.resolve(["127.0.0.1"]);
const settle = () => new Promise((r) => setTimeout(r, 100));

Deno.test("webhook attempts reuse connections to a receiver", async (t) => {
  await t.step("five attempts to one receiver travel over one connection that stays open", async () => {
    const server = rawHttpServer();
    const connections = new ConnectionPool();
    try {
      for (let i = 0; i < 5; i++) {
        const res = await sendWebhook(`${server.url}/hook`, EXAMPLE, {}, {
          timeoutMs: 1000,
          allowPrivateUrls: true,
          connections,
        });
        assert.deepEqual([res.ok, res.responseBody], [true, "ok"]);
      }
      assert.deepEqual([server.seen.connections, server.seen.requests.length], [1, 5]);
      for (const request of server.seen.requests) assert.doesNotMatch(request, /\r\nconnection: close\r\n/i);
    } finally {
      connections.close();
      server.close();
    }
  });

  await t.step("two host names on one address never share a connection", async () => {
    const server = rawHttpServer();
    const connections = new ConnectionPool();
    try {
      for (const host of ["a.test", "b.test", "a.test", "b.test"]) {
        const res = await sendWebhook(`http://${host}:${server.port}/hook`, EXAMPLE, {}, {
          timeoutMs: 1000,
          allowPrivateUrls: true,
          resolve: loopback,
          connections,
        });
        assert.equal(res.ok, true);
      }
      assert.equal(server.seen.connections, 2);
      const hosts = server.seen.requests.map((r) => /\r\nhost: ([^\r]+)/i.exec(r)?.[1]);
      assert.deepEqual(hosts, ["a.test", "b.test", "a.test", "b.test"].map((h) => `${h}:${server.port}`));
    } finally {
      connections.close();
      server.close();
    }
  });

  await t.step("a kept connection the receiver drops fails that attempt, and the POST is not sent again", async () => {
    const server = rawHttpServer((n) => n === 2 ? "drop" : "answer");
    const connections = new ConnectionPool();
    try {
      const send = () =>
        sendWebhook(`${server.url}/hook`, EXAMPLE, {}, { timeoutMs: 1000, allowPrivateUrls: true, connections });
      assert.equal((await send()).ok, true);
      const dropped = await send();
      assert.deepEqual([dropped.ok, dropped.httpStatus], [false, 0]);
      assert.match(dropped.responseBody, /^connection (reset|failed)/);
      await settle();
      assert.equal(server.seen.requests.length, 2, "the dropped POST was sent once");
      assert.equal((await send()).ok, true, "the next attempt opens a new connection");
      assert.deepEqual([server.seen.connections, server.seen.requests.length], [2, 3]);
    } finally {
      connections.close();
      server.close();
    }
  });

  await t.step("an attempt that times out on a kept connection is not sent again", async () => {
    const server = rawHttpServer((n) => n === 2 ? "hang" : "answer");
    const connections = new ConnectionPool();
    try {
      const send = (timeoutMs: number) =>
        sendWebhook(`${server.url}/hook`, EXAMPLE, {}, { timeoutMs, allowPrivateUrls: true, connections });
      assert.equal((await send(1000)).ok, true);
      const late = await send(150);
      assert.deepEqual([late.ok, late.responseBody], [false, "timeout after 150 ms"]);
      await settle();
      await settle();
      assert.equal(server.seen.requests.length, 2, "the POST that timed out was sent once");
    } finally {
      connections.close();
      server.close();
    }
  });

  await t.step("an answer cut at 16 KiB closes its connection: the next attempt opens another", async () => {
    const server = rawHttpServer((n) => n === 1 ? "large" : "answer");
    const connections = new ConnectionPool();
    try {
      const send = () =>
        sendWebhook(`${server.url}/hook`, EXAMPLE, {}, { timeoutMs: 1000, allowPrivateUrls: true, connections });
      assert.equal((await send()).ok, true);
      assert.equal((await send()).ok, true);
      assert.equal(server.seen.connections, 2);
    } finally {
      connections.close();
      server.close();
    }
  });

  await t.step("a connection left idle is closed while its destination stays in use", async () => {
    const server = rawHttpServer();
    const connections = new ConnectionPool({ idleMs: 150 });
    const send = () =>
      sendWebhook(`${server.url}/hook`, EXAMPLE, {}, { timeoutMs: 1000, allowPrivateUrls: true, connections });
    try {
      assert.deepEqual((await Promise.all([send(), send()])).map((r) => r.ok), [true, true]);
      assert.equal(server.seen.connections, 2);
      // one connection keeps working every 50 ms; the other waits longer than idleMs and is closed
      for (let i = 0; i < 6; i++) {
        assert.equal((await send()).ok, true);
        await new Promise((r) => setTimeout(r, 50));
      }
      assert.deepEqual([server.seen.connections, server.seen.closed], [2, 1]);
    } finally {
      connections.close();
      server.close();
    }
  });

  await t.step("idle connections are closed", async () => {
    const server = rawHttpServer();
    const connections = new ConnectionPool({ idleMs: 50 });
    try {
      const res = await sendWebhook(`${server.url}/hook`, EXAMPLE, {}, {
        timeoutMs: 1000,
        allowPrivateUrls: true,
        connections,
      });
      assert.equal(res.ok, true);
      assert.equal(connections.size, 1);
      await settle();
      await settle();
      assert.equal(connections.size, 0);
      assert.equal(server.seen.closed, 1, "the receiver saw the connection closed");
    } finally {
      connections.close();
      server.close();
    }
  });

  await t.step("attempts with different client certificates (or none) never share a connection", async () => {
    const server = rawHttpServer(() => "answer", TLS);
    const connections = new ConnectionPool();
    // two credentials by name: the pool keys on `id` (the service's receiver tests check the certificate is sent)
    const client = (id: string) => ({ cert: fixture("client.pem"), key: fixture("client.key"), id });
    try {
      for (const credential of [client("a"), client("b"), null, client("a"), client("b"), null]) {
        const res = await sendWebhook(`https://hooks.test:${server.port}/hook`, EXAMPLE, {}, {
          timeoutMs: 2000,
          allowPrivateUrls: true,
          resolve: loopback,
          ca: [CA],
          connections,
          client: credential,
        });
        assert.equal(res.ok, true, res.responseBody);
      }
      assert.deepEqual([server.seen.connections, server.seen.requests.length], [3, 6]);
      assert.equal(connections.size, 3);
    } finally {
      connections.close();
      server.close();
    }
  });

  await t.step("over TLS: one handshake for many attempts, and the certificate is still checked per host", async () => {
    const server = rawHttpServer(() => "answer", TLS);
    const connections = new ConnectionPool();
    const send = (host: string) =>
      sendWebhook(`https://${host}:${server.port}/hook`, EXAMPLE, {}, {
        timeoutMs: 2000,
        allowPrivateUrls: true,
        resolve: loopback,
        ca: [CA],
        connections,
      });
    try {
      for (let i = 0; i < 3; i++) assert.equal((await send("hooks.test")).ok, true);
      assert.equal(server.seen.connections, 1);
      const other = await send("other.test");
      assert.equal(other.ok, false);
      assert.match(other.responseBody, /^TLS: the certificate does not match the host name/);
      assert.equal(server.seen.requests.length, 3, "nothing was sent to other.test over the hooks.test connection");
    } finally {
      connections.close();
      server.close();
    }
  });
});
