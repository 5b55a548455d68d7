/**
 * Where webhooks may go: the address guard (domain/webhooks/endpoints/url_guard.ts) over every special-purpose range,
 * and a connection that reaches only the address that was checked.
 */
import assert from "node:assert/strict";
import { checkedAddresses, isPublicAddress, type Resolver } from "../../domain/webhooks/endpoints/url_guard.ts";
import { sendWebhook } from "../../domain/webhooks/engine/sender.ts";
import { rawHttpServer } from "../support/raw_http_server.ts";
import { EXAMPLE, startReceiver } from "../support/webhook_receiver.ts";

const fixture = (name: string) => Deno.readTextFileSync(new URL(`../fixtures/tls/${name}`, import.meta.url));
/** A test-only authority and a certificate it issued for `hooks.test` (tests/fixtures/tls/README.md). */
const CA = fixture("ca.pem");
// every refusal names the setting that would allow it
const ALLOWED_BY = " (WEBHOOK_ALLOW_PRIVATE_URLS=true allows it, never in production)";
const PRIVATE = `refused: private address${ALLOWED_BY}`;
const LOCAL_NAME = `refused: local host name${ALLOWED_BY}`;
/** Link-local and cloud metadata addresses: refused even where private ones are allowed. */
const NEVER = "refused: link-local or cloud metadata address (no setting allows it)";
const ONLY_HTTPS =
  "refused: only https URLs are delivered (WEBHOOK_ALLOW_PRIVATE_URLS=true allows http, never in production)";
const TLS = { cert: fixture("hooks.test.pem"), key: fixture("hooks.test.key") };

/** Answers `first` to the first question and `later` to every other one, counting the questions. */
function rebinding(first: string[], later: string[]) {
  const resolver: { calls: number; resolve: Resolver } = {
    calls: 0,
    resolve: () => Promise.resolve(resolver.calls++ === 0 ? first : later),
  };
  return resolver;
}

/** A TCP listener that only counts the connections it accepts, then drops them. */
function countingListener(hostname = "127.0.0.1", port = 0) {
  const listener = Deno.listen({ hostname, port });
  const counter = { port: (listener.addr as Deno.NetAddr).port, accepted: 0, close: () => listener.close() };
  (async () => {
    for await (const conn of listener) {
      counter.accepted++;
      conn.close();
    }
  })().catch(() => {});
  return counter;
}

/** A port on 127.0.0.1 that is also free on 127.0.0.2, so one URL port reaches either address. */
function portFreeOnBoth(): number {
  for (;;) {
    const first = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const { port } = first.addr as Deno.NetAddr;
    first.close();
    try {
      Deno.listen({ hostname: "127.0.0.2", port }).close();
      return port;
    } catch { /* taken there: try another */ }
  }
}

Deno.test("the address guard lets only public unicast addresses through", async (t) => {
  await t.step("every special-purpose IPv4 range is refused, from its first address to its last", () => {
    const ranges: [string, string, string][] = [
      ["0.0.0.0", "0.255.255.255", "this network"],
      ["10.0.0.0", "10.255.255.255", "private"],
      ["100.64.0.0", "100.127.255.255", "carrier-grade NAT"],
      ["127.0.0.0", "127.255.255.255", "loopback"],
      ["169.254.0.0", "169.254.255.255", "link-local, cloud metadata"],
      ["172.16.0.0", "172.31.255.255", "private"],
      ["192.0.0.0", "192.0.0.255", "IETF protocol assignments"],
      ["192.0.2.0", "192.0.2.255", "documentation"],
      ["192.31.196.0", "192.31.196.255", "AS112"],
      ["192.52.193.0", "192.52.193.255", "AMT"],
      ["192.88.99.0", "192.88.99.255", "6to4 relay"],
      ["192.168.0.0", "192.168.255.255", "private"],
      ["192.175.48.0", "192.175.48.255", "AS112 direct delegation"],
      ["198.18.0.0", "198.19.255.255", "benchmarking"],
      ["198.51.100.0", "198.51.100.255", "documentation"],
      ["203.0.113.0", "203.0.113.255", "documentation"],
      ["224.0.0.0", "239.255.255.255", "multicast"],
      ["240.0.0.0", "255.255.255.255", "reserved, broadcast"],
    ];
    for (const [first, last, name] of ranges) {
      assert.equal(isPublicAddress(first), false, `${first} (${name})`);
      assert.equal(isPublicAddress(last), false, `${last} (${name})`);
    }
  });

  await t.step("the public addresses right next to those ranges pass", () => {
    for (
      const ip of [
        "1.0.0.0",
        "9.255.255.255",
        "11.0.0.0",
        "100.63.255.255",
        "100.128.0.0",
        "126.255.255.255",
        "128.0.0.0",
        "169.253.255.255",
        "169.255.0.0",
        "172.15.255.255",
        "172.32.0.0",
        "192.0.1.0",
        "192.0.3.0",
        "192.167.255.255",
        "192.169.0.0",
        "198.17.255.255",
        "198.20.0.0",
        "223.255.255.255",
        "8.8.8.8",
      ]
    ) assert.equal(isPublicAddress(ip), true, ip);
  });

  await t.step("IPv4-mapped IPv6 (::ffff:0:0/96) is refused in every notation, whatever address it holds", () => {
    for (
      const ip of [
        "::ffff:127.0.0.1",
        "::ffff:7f00:1",
        "[::ffff:7f00:1]",
        "::FFFF:7F00:0001",
        "0:0:0:0:0:ffff:7f00:1",
        "::ffff:169.254.169.254",
        "::ffff:a9fe:a9fe",
        "::ffff:8.8.8.8",
        "::ffff:808:808",
        "::ffff:0:0",
        "::ffff:ffff:ffff",
      ]
    ) assert.equal(isPublicAddress(ip), false, ip);
  });

  await t.step("NAT64 64:ff9b::/96 is as public as the IPv4 address it holds; local-use NAT64 never is", () => {
    for (const ip of ["64:ff9b::7f00:1", "64:ff9b::127.0.0.1", "64:ff9b::a00:1", "64:ff9b::a9fe:a9fe"]) {
      assert.equal(isPublicAddress(ip), false, ip);
    }
    assert.equal(isPublicAddress("64:ff9b::808:808"), true);
    assert.equal(isPublicAddress("64:ff9b:1::808:808"), false);
  });

  await t.step("every other special-purpose IPv6 range is refused", () => {
    for (
      const ip of [
        "::",
        "::1",
        "::127.0.0.1", // IPv4-compatible (deprecated)
        "::ffff:0:7f00:1", // IPv4-translated
        "100::1", // discard-only
        "2001::1", // Teredo
        "2001:2::1", // benchmarking
        "2001:20::1", // ORCHIDv2
        "2001:1ff:ffff::1", // end of IETF protocol assignments
        "2001:db8::1", // documentation
        "2002:7f00:1::1", // 6to4 of loopback
        "2002:a9fe:a9fe::1", // 6to4 of the metadata address
        "2620:4f:8000::1", // AS112 direct delegation
        "3fff::1", // documentation
        "5f00::1", // SRv6 identifiers
        "fc00::1", // unique local
        "fd00:ec2::254", // unique local: AWS's metadata address
        "fe80::1", // link-local
        "fe80::1%eth0",
        "fec0::1", // site-local
        "ff02::1", // multicast
        "4000::1", // outside global unicast 2000::/3
      ]
    ) assert.equal(isPublicAddress(ip), false, ip);
  });

  await t.step("public IPv6 addresses pass", () => {
    for (const ip of ["2606:4700:4700::1111", "2001:4860:4860::8888", "2001:200::1", "2002:808:808::1", "3ffe::1"]) {
      assert.equal(isPublicAddress(ip), true, ip);
    }
  });

  await t.step("what does not parse as an address is not public", () => {
    for (
      const text of ["", "example.com", "127.1", "0x7f.0.0.1", "010.0.0.1", "1.2.3.4.5", "::ffff:1.2.3", "1::2::3"]
    ) {
      assert.equal(isPublicAddress(text), false, JSON.stringify(text));
    }
  });

  await t.step("a name is refused when any of its addresses is private; the reason never names one", async () => {
    const url = new URL("https://hooks.example.com/in");
    for (
      const [answer, reason] of [
        [["10.1.2.3"], PRIVATE],
        [["93.184.215.14", "169.254.169.254"], NEVER],
        [["::ffff:127.0.0.1"], PRIVATE],
        [["fd00:ec2::254"], NEVER],
      ] as const
    ) {
      const resolve: Resolver = () => Promise.resolve([...answer]);
      await assert.rejects(checkedAddresses(url, { resolve, allowPrivate: false }), (err: Error) => {
        assert.equal(err.message, reason);
        return true;
      });
    }
    const resolve: Resolver = () => Promise.resolve(["93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"]);
    assert.deepEqual(await checkedAddresses(url, { resolve, allowPrivate: false }), [
      "93.184.215.14",
      "2606:2800:21f:cb07:6820:80da:af6b:8b2c",
    ]);
  });
});

Deno.test("webhook egress connects only to the address that was checked", async (t) => {
  await t.step("a name answering a public address, then loopback, never reaches loopback", async () => {
    const loopback = countingListener();
    try {
      const dns = rebinding(["1.1.1.1"], ["127.0.0.1"]);
      const res = await sendWebhook(`https://rebind.test:${loopback.port}/hook`, EXAMPLE, {}, {
        timeoutMs: 1000,
        allowPrivateUrls: false,
        resolve: dns.resolve,
      });
      assert.equal(res.ok, false);
      assert.equal(res.httpStatus, 0);
      assert.doesNotMatch(res.responseBody, /127\.0\.0\.1|1\.1\.1\.1/);
      assert.equal(dns.calls, 1, "the name is resolved once");
      assert.equal(loopback.accepted, 0, "no connection reached the second answer");
    } finally {
      loopback.close();
    }
  });

  await t.step("the request arrives at the checked address, not at a second answer", async () => {
    const port = portFreeOnBoth();
    const checked = startReceiver(undefined, { hostname: "127.0.0.1", port });
    const rebound = startReceiver(undefined, { hostname: "127.0.0.2", port });
    try {
      const dns = rebinding(["127.0.0.1"], ["127.0.0.2"]);
      const res = await sendWebhook(`http://rebind.test:${port}/pinned?q=1`, EXAMPLE, { "x-test": "yes" }, {
        timeoutMs: 2000,
        allowPrivateUrls: true,
        resolve: dns.resolve,
      });
      assert.deepEqual([res.ok, res.httpStatus, res.responseBody], [true, 200, "ok"]);
      assert.equal(dns.calls, 1);
      assert.equal(rebound.arrivals.length, 0);
      const [arrival] = checked.at("/pinned");
      assert.equal(arrival.raw, EXAMPLE);
      assert.equal(arrival.headers.get("host"), `rebind.test:${port}`);
      assert.equal(arrival.headers.get("x-test"), "yes");
    } finally {
      await checked.close();
      await rebound.close();
    }
  });

  await t.step("over TLS the certificate is still verified against the host name", async () => {
    const port = portFreeOnBoth();
    const checked = startReceiver(undefined, { hostname: "127.0.0.1", port, ...TLS });
    const rebound = countingListener("127.0.0.2", port);
    try {
      const send = (host: string, ca?: string[]) =>
        sendWebhook(`https://${host}:${port}/tls`, EXAMPLE, {}, {
          timeoutMs: 2000,
          allowPrivateUrls: true,
          resolve: rebinding(["127.0.0.1"], ["127.0.0.2"]).resolve,
          ca,
        });
      const ok = await send("hooks.test", [CA]);
      assert.deepEqual([ok.ok, ok.httpStatus], [true, 200]);
      assert.equal(checked.at("/tls").length, 1);
      assert.equal(checked.at("/tls")[0].headers.get("host"), `hooks.test:${port}`);

      const wrongName = await send("other.test", [CA]);
      assert.deepEqual([wrongName.ok, wrongName.httpStatus], [false, 0]);
      assert.equal(
        wrongName.responseBody,
        "TLS: the certificate does not match the host name (ERR_TLS_CERT_ALTNAME_INVALID)",
      );

      const untrusted = await send("hooks.test");
      assert.deepEqual([untrusted.ok, untrusted.httpStatus], [false, 0]);
      assert.match(untrusted.responseBody, /^TLS: the certificate is not trusted \([A-Z_]+\)$/);

      assert.equal(checked.at("/tls").length, 1, "nothing was sent over an unverified connection");
      assert.equal(rebound.accepted, 0);
    } finally {
      await checked.close();
      rebound.close();
    }
  });
});

Deno.test("delivery errors never reveal an address", async (t) => {
  const strict = { timeoutMs: 1000, allowPrivateUrls: false };

  await t.step("a private answer, a mapped IPv6 literal or a local name is refused before any connection", async () => {
    const cases: [string, string[], string][] = [
      ["https://internal.example.com/", ["10.1.2.3"], PRIVATE],
      ["https://metadata.example.com/", ["169.254.169.254"], NEVER],
      ["https://mixed.example.com/", ["8.8.8.8", "127.0.0.1"], PRIVATE],
      ["https://mapped.example.com/", ["::ffff:7f00:1"], PRIVATE],
      ["https://[::ffff:127.0.0.1]/", [], PRIVATE],
      ["https://[::ffff:7f00:1]/", [], PRIVATE],
      ["https://[64:ff9b::a9fe:a9fe]/", [], NEVER],
      ["https://169.254.169.254/latest/meta-data", [], NEVER],
      ["https://nowhere.example.com/", [], "DNS: the host name does not resolve"],
      ["https://metadata.google.internal/", ["169.254.169.254"], LOCAL_NAME],
      ["http://public.example.com/", ["8.8.8.8"], ONLY_HTTPS],
    ];
    for (const [url, answer, reason] of cases) {
      const res = await sendWebhook(url, EXAMPLE, {}, { ...strict, resolve: () => Promise.resolve(answer) });
      assert.deepEqual([res.ok, res.httpStatus, res.responseBody], [false, 0, reason], url);
    }
  });

  await t.step("a refused connection says so without the address it tried", async () => {
    const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const { port } = listener.addr as Deno.NetAddr;
    listener.close();
    const res = await sendWebhook(`http://receiver.test:${port}/`, EXAMPLE, {}, {
      timeoutMs: 1000,
      allowPrivateUrls: true,
      resolve: () => Promise.resolve(["127.0.0.1"]),
    });
    assert.deepEqual([res.ok, res.httpStatus, res.responseBody], [false, 0, "connection refused (ECONNREFUSED)"]);
  });
});

Deno.test("without a connection pool, every attempt has a connection of its own", async (t) => {
  await t.step("two attempts to a keep-alive receiver open two connections, each asking to close", async () => {
    const server = rawHttpServer();
    try {
      for (let i = 0; i < 2; i++) {
        const res = await sendWebhook(`${server.url}/twice`, EXAMPLE, {}, { timeoutMs: 1000, allowPrivateUrls: true });
        assert.deepEqual([res.ok, res.responseBody], [true, "ok"]);
      }
      assert.equal(server.seen.connections, 2);
      assert.equal(server.seen.requests.length, 2);
      for (const request of server.seen.requests) assert.match(request, /\r\nconnection: close\r\n/i);
    } finally {
      server.close();
    }
  });

  await t.step("a receiver that drops the connection after reading the POST gets it once", async () => {
    const server = rawHttpServer(() => "drop");
    try {
      const res = await sendWebhook(`${server.url}/dropped`, EXAMPLE, {}, { timeoutMs: 1000, allowPrivateUrls: true });
      assert.deepEqual([res.ok, res.httpStatus], [false, 0]);
      assert.doesNotMatch(res.responseBody, /127\.0\.0\.1/);
      await new Promise((r) => setTimeout(r, 100));
      assert.equal(server.seen.requests.length, 1);
    } finally {
      server.close();
    }
  });

  await t.step("a chunked answer is read and decoded", async () => {
    const rx = startReceiver(() =>
      new Response(
        new ReadableStream({
          start(controller) {
            for (const part of ["accepted ", "in ", "three chunks"]) controller.enqueue(new TextEncoder().encode(part));
            controller.close();
          },
        }),
      )
    );
    try {
      const res = await sendWebhook(`${rx.url}/chunked`, EXAMPLE, {}, { timeoutMs: 1000, allowPrivateUrls: true });
      assert.deepEqual([res.ok, res.httpStatus, res.responseBody], [true, 200, "accepted in three chunks"]);
    } finally {
      await rx.close();
    }
  });
});
