/**
 * The URL guard on its own (no network): which addresses a webhook may never reach, checked at the edges of each
 * range and in every notation an IPv4 address can hide in inside IPv6; and the one form of a loopback URL, by which
 * localhost, 127.0.0.1 and [::1] are one receiver.
 */
import assert from "node:assert/strict";
import {
  checkedAddresses,
  isIpLiteral,
  isLocalHostname,
  isNeverReachable,
  isPrivateAddress,
  loopbackForm,
  systemResolver,
} from "../../domain/webhooks/endpoints/url_guard.ts";

/** The check a delivery makes before it connects, with the operating system's resolver. */
const assertPublicDestination = (url: URL) => checkedAddresses(url, { resolve: systemResolver, allowPrivate: false });

/**
 * The IPv4 blocks no webhook may reach, written from the IANA special-purpose registry (those not globally
 * reachable) and RFC 1918, 6598, 3927, 5737, 2544, 5771 and 1112: [first address, prefix length].
 */
const PRIVATE_V4: [string, number][] = [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.0.2.0", 24],
  ["192.88.99.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["198.51.100.0", 24],
  ["203.0.113.0", 24],
  ["224.0.0.0", 4],
  ["240.0.0.0", 4],
];

const toInt = (ip: string) => ip.split(".").reduce((n, o) => n * 256 + Number(o), 0);
const toDotted = (n: number) => [24, 16, 8, 0].map((s) => Math.floor(n / 2 ** s) % 256).join(".");
const RANGES = PRIVATE_V4.map(([first, prefix]) => {
  const start = toInt(first);
  return { first: start, last: start + 2 ** (32 - prefix) - 1 };
});
const inTable = (n: number) => RANGES.some((r) => n >= r.first && n <= r.last);

/** Every range's first, middle and last address (private), and the addresses just outside it that no other range holds (public). */
const EDGES: { ip: string; private: boolean }[] = RANGES.flatMap(({ first, last }) => [
  ...[first, Math.floor((first + last) / 2), last].map((n) => ({ ip: toDotted(n), private: true })),
  ...[first - 1, last + 1].filter((n) => n >= 0 && n < 2 ** 32 && !inTable(n))
    .map((n) => ({ ip: toDotted(n), private: false })),
]);

/** The two 16-bit groups of an IPv4 address, in hex. */
const groups = (ip: string) => {
  const n = toInt(ip);
  return [Math.floor(n / 65536).toString(16), (n % 65536).toString(16)];
};

Deno.test("IPv4: every blocked range is refused up to its edges, its neighbours pass", () => {
  assert.ok(EDGES.filter((e) => !e.private).length >= 20, "enough public neighbours to mean something");
  for (const { ip, private: expected } of EDGES) assert.equal(isPrivateAddress(ip), expected, ip);
  for (const ip of ["8.8.8.8", "1.1.1.1", "200.160.2.3", "201.48.0.1"]) assert.equal(isPrivateAddress(ip), false, ip);
});

Deno.test("an IPv4 address inside IPv6 gets the verdict of the IPv4 address", async (t) => {
  await t.step(
    "IPv4-mapped (::ffff:0:0/96), dotted or in hex, any case, with brackets: refused, whatever it holds",
    () => {
      // no receiver is reached through a mapped literal, so the whole block is refused rather than unwrapped
      for (const { ip } of EDGES) {
        const expected = true;
        const [hi, lo] = groups(ip);
        for (
          const form of [
            `::ffff:${ip}`,
            `::ffff:${hi}:${lo}`,
            `0:0:0:0:0:ffff:${ip}`,
            `0000:0000:0000:0000:0000:FFFF:${hi.toUpperCase()}:${lo.toUpperCase()}`,
            `[::ffff:${ip}]`,
          ]
        ) assert.equal(isPrivateAddress(form), expected, form);
      }
    },
  );

  await t.step("NAT64 (64:ff9b::/96) and 6to4 (2002::/16)", () => {
    for (const { ip, private: expected } of EDGES) {
      const [hi, lo] = groups(ip);
      assert.equal(isPrivateAddress(`64:ff9b::${ip}`), expected, `64:ff9b::${ip}`);
      assert.equal(isPrivateAddress(`64:ff9b::${hi}:${lo}`), expected, `64:ff9b::${hi}:${lo}`);
      assert.equal(isPrivateAddress(`2002:${hi}:${lo}::1`), expected, `2002:${hi}:${lo}::1`);
    }
  });

  await t.step("the deprecated IPv4-compatible form (::a.b.c.d) of a private address is refused", () => {
    for (const { ip } of EDGES.filter((e) => e.private)) assert.equal(isPrivateAddress(`::${ip}`), true, `::${ip}`);
  });

  await t.step("a URL with a mapped private address is refused after the URL parser rewrote it", async () => {
    for (const ip of ["10.0.0.1", "169.254.169.254", "192.168.1.1", "100.64.0.1"]) {
      const url = new URL(`https://[::ffff:${ip}]/hook`);
      assert.ok(url.hostname.startsWith("[::ffff:") && !url.hostname.includes("."), url.hostname);
      await assert.rejects(
        assertPublicDestination(url),
        /refused: (private|link-local or cloud metadata) address/,
        url.href,
      );
    }
  });
});

Deno.test("IPv6: loopback, unspecified, unique local, link-local, site-local, multicast, documentation", () => {
  const blocked = [
    "::1",
    "0:0:0:0:0:0:0:1",
    "::",
    "fc00::",
    "fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
    "fd00:ec2::254",
    "fe80::",
    "fe80::1%eth0",
    "febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
    "fec0::1",
    "feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
    "ff00::",
    "ff02::1",
    "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
    "2001:db8::",
    "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff",
    "[FE80::1]",
  ];
  for (const ip of blocked) assert.equal(isPrivateAddress(ip), true, ip);
  const open = [
    "2606:4700:4700::1111",
    "2001:4860:4860::8888",
    "2800:3f0:4001:80e::200e",
    "2001:db7:ffff:ffff:ffff:ffff:ffff:ffff",
    "2001:db9::",
  ];
  for (const ip of open) assert.equal(isPrivateAddress(ip), false, ip);
});

Deno.test("what counts as an IP literal", () => {
  for (
    const host of ["1.2.3.4", "255.255.255.255", "::", "[::1]", "2001:db8::1", "::ffff:1.2.3.4", "1:2:3:4:5:6:7:8"]
  ) {
    assert.equal(isIpLiteral(host), true, host);
  }
  for (
    const host of ["example.com", "1.2.3", "256.1.1.1", "1.2.3.4.5", "1:2:3:4:5:6:7:8:9", "1::2::3", "12345::", "g::1"]
  ) {
    assert.equal(isIpLiteral(host), false, host);
    assert.equal(isPrivateAddress(host), false, `${host} is no address, so not judged as one`);
  }
});

Deno.test("names that never leave the machine are refused whatever DNS says", async () => {
  for (const host of ["localhost", "LOCALHOST.", "api.localhost", "printer.local", "metadata.google.internal"]) {
    assert.equal(isLocalHostname(host), true, host);
    await assert.rejects(assertPublicDestination(new URL(`https://${host}/hook`)), /refused: local host name/, host);
  }
  for (const host of ["localhost.example.com", "internal.example.com", "local.example.com", "mylocal"]) {
    assert.equal(isLocalHostname(host), false, host);
  }
  // a public IP literal is accepted without any lookup
  await assertPublicDestination(new URL("https://8.8.8.8/hook"));
  await assertPublicDestination(new URL("https://[2606:4700:4700::1111]/hook"));
});

Deno.test("with private receivers allowed (development), loopback is reached but never a link-local or metadata address", async (t) => {
  const allowing = (answer: string[]) => ({ resolve: () => Promise.resolve(answer), allowPrivate: true });
  const NEVER = /refused: link-local or cloud metadata address \(no setting allows it\)$/;

  await t.step("the metadata address in every notation the URL parser accepts, and link-local IPv6", async () => {
    for (
      const url of [
        "http://169.254.169.254/latest/meta-data/",
        "http://2852039166/", // 169.254.169.254 as one number
        "http://0xa9.0xfe.0xa9.0xfe/",
        "http://169.254.0.1/",
        "http://100.100.100.200/", // Alibaba Cloud's metadata service
        "http://[::ffff:169.254.169.254]/",
        "http://[64:ff9b::a9fe:a9fe]/",
        "http://[2002:a9fe:a9fe::1]/",
        "http://[fd00:ec2::254]/",
        "http://[fe80::1]/",
      ]
    ) {
      await assert.rejects(checkedAddresses(new URL(url), allowing([])), NEVER, url);
    }
  });

  await t.step("a name that resolves to one, among other addresses or alone", async () => {
    const url = new URL("http://metadata.example.com/");
    for (const answer of [["169.254.169.254"], ["127.0.0.1", "169.254.169.254"], ["fd00:ec2::254"], ["fe80::1"]]) {
      await assert.rejects(checkedAddresses(url, allowing(answer)), NEVER, answer.join(","));
    }
  });

  await t.step("loopback and private receivers stay allowed, as the README's quickstart needs", async () => {
    assert.deepEqual(await checkedAddresses(new URL("http://127.0.0.1:9000/hook"), allowing([])), ["127.0.0.1"]);
    assert.deepEqual(await checkedAddresses(new URL("http://[::1]:9000/hook"), allowing([])), ["::1"]);
    assert.deepEqual(await checkedAddresses(new URL("http://localhost:9000/"), allowing(["127.0.0.1"])), ["127.0.0.1"]);
    assert.deepEqual(await checkedAddresses(new URL("http://10.0.0.5/"), allowing([])), ["10.0.0.5"]);
  });

  await t.step("the edges: 169.254.0.0/16 and 100.100.100.200 only, fe80::/10 and fd00:ec2::254 only", () => {
    for (const ip of ["169.254.0.0", "169.254.255.255", "100.100.100.200", "fe80::", "febf::1", "fd00:ec2::254"]) {
      assert.equal(isNeverReachable(ip), true, ip);
    }
    for (
      const ip of ["169.253.255.255", "169.255.0.0", "100.100.100.199", "100.100.100.201", "fec0::1", "fd00:ec2::253"]
    ) {
      assert.equal(isNeverReachable(ip), false, ip);
    }
  });
});

Deno.test("a loopback URL has one form whichever name it uses; any other URL has none", () => {
  const form = "http://localhost:4001/hooks?a=1";
  for (
    const url of [
      "http://127.0.0.1:4001/hooks?a=1",
      "http://localhost:4001/hooks?a=1",
      "http://[::1]:4001/hooks?a=1",
      "http://LocalHost.:4001/hooks?a=1#part",
      "http://127.1:4001/hooks?a=1",
      "http://[0:0:0:0:0:0:0:1]:4001/hooks?a=1",
    ]
  ) {
    assert.equal(loopbackForm(url), form, url);
  }
  assert.equal(loopbackForm("http://localhost:80/hooks"), loopbackForm("http://127.0.0.1/hooks"));
  for (
    const other of [
      "http://localhost:4002/hooks?a=1",
      "https://localhost:4001/hooks?a=1",
      "http://localhost:4001/hooks",
    ]
  ) {
    assert.notEqual(loopbackForm(other), form, other);
  }
  for (
    const none of ["http://127.0.0.2:4001/hooks", "https://example.com/hooks", "http://app.localhost/", "not a url"]
  ) {
    assert.equal(loopbackForm(none), null, none);
  }
});
