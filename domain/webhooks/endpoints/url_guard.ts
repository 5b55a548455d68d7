/**
 * Keeps webhook deliveries away from the service's own network (SSRF): only public unicast addresses may be
 * reached. Every special-purpose range of the IANA registries is refused (loopback, private, link-local with the
 * cloud metadata address 169.254.169.254, carrier-grade NAT, documentation, benchmarking, multicast, reserved), in
 * IPv4 and IPv6, and so is every IPv6 address outside global unicast 2000::/3 except NAT64 of a public IPv4 address.
 * Whatever does not parse as an address counts as not public. Link-local addresses, where clouds answer with their
 * instance metadata (credentials included), are refused even where private addresses are allowed (`isNeverReachable`).
 */

import { lookup } from "node:dns/promises";

/** IPv4 ranges no webhook may reach, as [first octets, prefix length]. */
const BLOCKED_V4: [number[], number][] = [
  [[0], 8], // "this" network
  [[10], 8], // private
  [[100, 64], 10], // carrier-grade NAT
  [[127], 8], // loopback
  [[169, 254], 16], // link-local, cloud metadata
  [[172, 16], 12], // private
  [[192, 0, 0], 24], // IETF protocol assignments
  [[192, 0, 2], 24], // documentation
  [[192, 31, 196], 24], // AS112
  [[192, 52, 193], 24], // AMT
  [[192, 88, 99], 24], // 6to4 relay anycast
  [[192, 168], 16], // private
  [[192, 175, 48], 24], // AS112 direct delegation
  [[198, 18], 15], // benchmarking
  [[198, 51, 100], 24], // documentation
  [[203, 0, 113], 24], // documentation
  [[224], 4], // multicast
  [[240], 4], // reserved, broadcast
];

/** IPv6 ranges inside global unicast 2000::/3 that are not public, as [first groups, prefix length]. */
const BLOCKED_V6: [number[], number][] = [
  [[0x2001, 0x0000], 23], // IETF protocol assignments: Teredo, benchmarking, ORCHID, AMT, AS112 ...
  [[0x2001, 0x0db8], 32], // documentation
  [[0x2620, 0x004f, 0x8000], 48], // AS112 direct delegation
  [[0x3fff], 20], // documentation
  [[0x5f00], 16], // segment routing (SRv6) identifiers
];

/**
 * Addresses no setting makes reachable, as [first parts, prefix length]: a cloud's metadata service is never a webhook
 * receiver, and an integrator who can name it reads the instance's credentials through the attempt log. IPv4:
 * link-local 169.254.0.0/16 (169.254.169.254 on AWS, GCP, Azure and Oracle), Alibaba Cloud's 100.100.100.200.
 * IPv6: link-local fe80::/10 and AWS's fd00:ec2::254.
 */
const NEVER_V4: [number[], number][] = [[[169, 254], 16], [[100, 100, 100, 200], 32]];
const NEVER_V6: [number[], number][] = [[[0xfe80], 10], [[0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x0254], 128]];

/** Dotted decimal only, no leading zeros: other notations (octal, hex, fewer parts) count as not an address. */
function parseV4(ip: string): number[] | null {
  const parts = ip.split(".");
  if (parts.length !== 4 || !parts.every((p) => /^(0|[1-9]\d{0,2})$/.test(p))) return null;
  const octets = parts.map(Number);
  return octets.every((o) => o <= 255) ? octets : null;
}

function inPrefix(value: number[], start: number[], prefix: number, bitsPerPart: number): boolean {
  for (let bit = 0; bit < prefix; bit += bitsPerPart) {
    const i = bit / bitsPerPart;
    const take = Math.min(bitsPerPart, prefix - bit);
    const shift = bitsPerPart - take;
    if ((value[i] >> shift) !== ((start[i] ?? 0) >> shift)) return false;
  }
  return true;
}

function publicV4(octets: number[]): boolean {
  return !BLOCKED_V4.some(([start, prefix]) => inPrefix(octets, start, prefix, 8));
}

/** The eight 16-bit groups of an IPv6 address (brackets, a zone and a dotted IPv4 tail allowed), or null. */
function parseV6(ip: string): number[] | null {
  let text = ip.replace(/^\[|\]$/g, "").split("%")[0].toLowerCase();
  const dotted = /(\d{1,3}(?:\.\d{1,3}){3})$/.exec(text);
  if (dotted) {
    const v4 = parseV4(dotted[1]);
    if (!v4 || !/:$/.test(text.slice(0, -dotted[1].length))) return null;
    text = text.slice(0, -dotted[1].length) +
      `${((v4[0] << 8) | v4[1]).toString(16)}:${((v4[2] << 8) | v4[3]).toString(16)}`;
  }
  const halves = text.split("::");
  if (halves.length > 2) return null;
  const head = halves[0] ? halves[0].split(":") : [];
  const tail = halves.length === 2 && halves[1] ? halves[1].split(":") : [];
  if (![...head, ...tail].every((g) => /^[0-9a-f]{1,4}$/.test(g))) return null;
  const missing = 8 - head.length - tail.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return null;
  return [...head, ...Array(halves.length === 2 ? missing : 0).fill("0"), ...tail].map((g) => parseInt(g, 16));
}

function publicV6(g: number[]): boolean {
  // NAT64 (64:ff9b::/96) reaches the IPv4 address in its last 32 bits: as public as that address.
  if (inPrefix(g, [0x64, 0xff9b, 0, 0, 0, 0], 96, 16)) return publicV4([g[6] >> 8, g[6] & 255, g[7] >> 8, g[7] & 255]);
  // Outside 2000::/3 nothing is public unicast: ::/8 (unspecified, loopback, IPv4-mapped ::ffff:0:0/96 and the
  // other embeddings of IPv4), 64:ff9b:1::/48, 100::/64, unique local fc00::/7, link-local, site-local, multicast.
  if ((g[0] & 0xe000) !== 0x2000) return false;
  // 6to4 (2002::/16) reaches the IPv4 address in bits 16..47.
  if (g[0] === 0x2002) return publicV4([g[1] >> 8, g[1] & 255, g[2] >> 8, g[2] & 255]);
  return !BLOCKED_V6.some(([start, prefix]) => inPrefix(g, start, prefix, 16));
}

/** The IPv4 address an IPv6 one carries: IPv4-mapped or -compatible (::/96), NAT64 (64:ff9b::/96), 6to4 (2002::/16). */
function embeddedV4(g: number[]): number[] | null {
  const v4 = (hi: number, lo: number) => [hi >> 8, hi & 255, lo >> 8, lo & 255];
  if (g.slice(0, 5).every((x) => x === 0) && (g[5] === 0 || g[5] === 0xffff)) return v4(g[6], g[7]);
  if (inPrefix(g, [0x64, 0xff9b, 0, 0, 0, 0], 96, 16)) return v4(g[6], g[7]);
  if (g[0] === 0x2002) return v4(g[1], g[2]);
  return null;
}

const neverV4 = (octets: number[]) => NEVER_V4.some(([start, prefix]) => inPrefix(octets, start, prefix, 8));

/**
 * True for an IP literal that no setting lets a webhook reach (`NEVER_V4`, `NEVER_V6`), in any notation: refused in
 * development too, where loopback and private receivers are allowed (README, "Quickstart").
 */
export function isNeverReachable(ip: string): boolean {
  const v4 = parseV4(ip);
  if (v4) return neverV4(v4);
  const v6 = parseV6(ip);
  if (!v6) return false;
  const carried = embeddedV4(v6);
  return (carried !== null && neverV4(carried)) || NEVER_V6.some(([start, prefix]) => inPrefix(v6, start, prefix, 16));
}

/** True for an IP literal (v4 or v6, brackets allowed) that is a public unicast address; false for anything else. */
export function isPublicAddress(ip: string): boolean {
  const v4 = parseV4(ip);
  if (v4) return publicV4(v4);
  const v6 = parseV6(ip);
  return v6 ? publicV6(v6) : false;
}

/** True for an IP literal that is not a public unicast address. */
export function isPrivateAddress(ip: string): boolean {
  return isIpLiteral(ip) && !isPublicAddress(ip);
}

export function isIpLiteral(host: string): boolean {
  return parseV4(host) !== null || parseV6(host) !== null;
}

/** Host names that never leave the machine, whatever DNS says. */
export function isLocalHostname(host: string): boolean {
  const h = host.toLowerCase().replace(/\.$/, "");
  return h === "localhost" || h.endsWith(".localhost") || h.endsWith(".local") || h.endsWith(".internal");
}

/** The names of this machine's loopback interface that a development receiver is reached by. */
const LOOPBACK_NAMES = new Set(["localhost", "127.0.0.1", "[::1]"]);

/**
 * One form of a loopback URL whichever of localhost, 127.0.0.1 or [::1] it names (the host written `localhost`; scheme,
 * port, path and query kept; the fragment, which no request carries, dropped), or null for any other URL: the same
 * receiver under two names is one URL for the rule of one endpoint per URL (docs/webhooks.md, "One endpoint per URL").
 * The URL parser has already unified `LOCALHOST`, `127.1`, `[0:0:0:0:0:0:0:1]` and an explicit default port.
 */
export function loopbackForm(raw: string): string | null {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return null;
  }
  if (!LOOPBACK_NAMES.has(url.hostname.replace(/\.$/, ""))) return null;
  url.hostname = "localhost";
  url.hash = "";
  return url.href;
}

/** A refusal to deliver, or a name that does not resolve. Its message is what the attempt log shows: it never names an address. */
export class BlockedDestination extends Error {}

/** The addresses of a host name; none when it does not resolve. */
export type Resolver = (hostname: string) => Promise<string[]>;

/** The operating system's resolver (hosts file included): the one a connection by name would have used. */
export const systemResolver: Resolver = async (hostname) => {
  try {
    return (await lookup(hostname, { all: true, verbatim: true })).map((a) => a.address);
  } catch (err) {
    const code = String((err as { code?: unknown })?.code ?? "");
    if (/^(ENOTFOUND|ENODATA|EAI_NONAME|EAI_NODATA)$/.test(code)) return [];
    // the resolver itself failed (no answer, refused): say so, with its code, rather than "does not resolve"
    throw new BlockedDestination(
      /^[A-Z0-9_]{2,64}$/.test(code)
        ? `DNS: the name could not be resolved (${code})`
        : "DNS: the name could not be resolved",
    );
  }
};

// the setting is named so that whoever reads the attempt log knows what would change it (docs/webhooks.md)
const ALLOWED_BY = " (WEBHOOK_ALLOW_PRIVATE_URLS=true allows it, never in production)";
const PRIVATE = `refused: private address${ALLOWED_BY}`;
const NEVER = "refused: link-local or cloud metadata address (no setting allows it)";

/**
 * Resolves `url`'s host once and returns the addresses a delivery may connect to: the connection must use these and
 * not resolve the name again, or a name answering a public address now and a private one a moment later (DNS
 * rebinding) would reach the private one. Throws BlockedDestination, unless private destinations are allowed, when
 * the host is a local name or any of its addresses is not public (a host with one public and one private address
 * could be steered to the private one); and, allowed or not, when any of them is link-local or a metadata address.
 */
export async function checkedAddresses(
  url: URL,
  opts: { resolve: Resolver; allowPrivate: boolean },
): Promise<string[]> {
  const host = url.hostname.replace(/^\[|\]$/g, "");
  if (isIpLiteral(host)) {
    if (isNeverReachable(host)) throw new BlockedDestination(NEVER);
    if (!opts.allowPrivate && !isPublicAddress(host)) throw new BlockedDestination(PRIVATE);
    return [host];
  }
  if (!opts.allowPrivate && isLocalHostname(host)) {
    throw new BlockedDestination(`refused: local host name${ALLOWED_BY}`);
  }
  const addresses = await opts.resolve(host);
  if (addresses.length === 0) throw new BlockedDestination("DNS: the host name does not resolve");
  if (addresses.some(isNeverReachable)) throw new BlockedDestination(NEVER);
  if (!addresses.every(opts.allowPrivate ? isIpLiteral : isPublicAddress)) throw new BlockedDestination(PRIVATE);
  return addresses;
}
