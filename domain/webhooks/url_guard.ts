/**
 * Keeps webhook deliveries away from the service's own network (SSRF): loopback, private, link-local (which holds
 * the cloud metadata address 169.254.169.254), carrier-grade NAT, multicast and reserved ranges, in IPv4 and IPv6.
 */

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
  [[192, 88, 99], 24], // 6to4 relay
  [[192, 168], 16], // private
  [[198, 18], 15], // benchmarking
  [[198, 51, 100], 24], // documentation
  [[203, 0, 113], 24], // documentation
  [[224], 4], // multicast
  [[240], 4], // reserved, broadcast
];

function parseV4(ip: string): number[] | null {
  const parts = ip.split(".");
  if (parts.length !== 4 || !parts.every((p) => /^\d{1,3}$/.test(p))) return null;
  const octets = parts.map(Number);
  return octets.every((o) => o <= 255) ? octets : null;
}

function v4ToInt(octets: number[]): number {
  return ((octets[0] << 24) | (octets[1] << 16) | (octets[2] << 8) | octets[3]) >>> 0;
}

function blockedV4(octets: number[]): boolean {
  const addr = v4ToInt(octets);
  return BLOCKED_V4.some(([start, prefix]) => {
    const base = v4ToInt([...start, 0, 0, 0, 0].slice(0, 4));
    const mask = prefix === 0 ? 0 : (~0 << (32 - prefix)) >>> 0;
    return ((addr & mask) >>> 0) === ((base & mask) >>> 0);
  });
}

/** The eight 16-bit groups of an IPv6 address (with an embedded dotted IPv4 tail allowed), or null. */
function parseV6(ip: string): number[] | null {
  let text = ip.replace(/^\[|\]$/g, "").split("%")[0].toLowerCase();
  const dotted = /(\d{1,3}(?:\.\d{1,3}){3})$/.exec(text);
  if (dotted) {
    const v4 = parseV4(dotted[1]);
    if (!v4) return null;
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

function blockedV6(g: number[]): boolean {
  const embeddedV4 = [g[6] >> 8, g[6] & 255, g[7] >> 8, g[7] & 255];
  if (g.every((x) => x === 0)) return true; // unspecified
  if (g.slice(0, 7).every((x) => x === 0) && g[7] === 1) return true; // loopback
  if (g.slice(0, 5).every((x) => x === 0) && (g[5] === 0xffff || g[5] === 0)) return blockedV4(embeddedV4); // mapped
  if (g[0] === 0x64 && g[1] === 0xff9b) return blockedV4(embeddedV4); // NAT64
  if (g[0] === 0x2002) return blockedV4([g[1] >> 8, g[1] & 255, g[2] >> 8, g[2] & 255]); // 6to4
  if ((g[0] & 0xfe00) === 0xfc00) return true; // unique local (holds AWS's fd00:ec2::254)
  if ((g[0] & 0xffc0) === 0xfe80) return true; // link-local
  if ((g[0] & 0xffc0) === 0xfec0) return true; // site-local (deprecated)
  if ((g[0] & 0xff00) === 0xff00) return true; // multicast
  if (g[0] === 0x2001 && g[1] === 0x0db8) return true; // documentation
  return false;
}

/** True for an IP literal (v4 or v6, brackets allowed) that is not a public unicast address. */
export function isPrivateAddress(ip: string): boolean {
  const v4 = parseV4(ip);
  if (v4) return blockedV4(v4);
  const v6 = parseV6(ip);
  return v6 ? blockedV6(v6) : false;
}

export function isIpLiteral(host: string): boolean {
  return parseV4(host) !== null || parseV6(host) !== null;
}

/** Host names that never leave the machine, whatever DNS says. */
export function isLocalHostname(host: string): boolean {
  const h = host.toLowerCase().replace(/\.$/, "");
  return h === "localhost" || h.endsWith(".localhost") || h.endsWith(".local") || h.endsWith(".internal");
}

export class BlockedDestination extends Error {}

/**
 * Resolves `url`'s host and throws BlockedDestination when any of its addresses is not public (a host with one
 * public and one private address could be steered to the private one). IP literals are checked as they are;
 * names are resolved with `Deno.resolveDns` (A and AAAA), which does not read /etc/hosts, so names only the local
 * hosts file knows are refused too.
 */
export async function assertPublicDestination(url: URL): Promise<void> {
  const host = url.hostname.replace(/^\[|\]$/g, "");
  if (isIpLiteral(host)) {
    if (isPrivateAddress(host)) throw new BlockedDestination(`refused: ${host} is not a public address`);
    return;
  }
  if (isLocalHostname(host)) throw new BlockedDestination(`refused: ${host} is a local name`);
  const lookups = await Promise.allSettled([Deno.resolveDns(host, "A"), Deno.resolveDns(host, "AAAA")]);
  const addresses = lookups.flatMap((r) => r.status === "fulfilled" ? r.value : []);
  if (addresses.length === 0) throw new BlockedDestination(`refused: ${host} does not resolve`);
  const blocked = addresses.find(isPrivateAddress);
  if (blocked) throw new BlockedDestination(`refused: ${host} resolves to ${blocked}, which is not a public address`);
}
