/**
 * Which address a request comes from, given the reverse proxies the service is told to trust (docs/production.md,
 * "Behind a reverse proxy: the client's address"), and the warning when a forwarding header arrives untrusted.
 */

import type { Context } from "hono";
import { log } from "../../domain/basics/log.ts";

/** How many reverse proxies in front of the service to believe, and which header they write (docs/production.md). */
export type TrustedProxies = { hops: number; header: "x-forwarded-for" | "forwarded" };

const MAX_ADDRESS_LENGTH = 100;

/**
 * The client's address for the per-address throttle. With no trusted proxy (the default), the address the
 * connection came from; a client cannot choose it. Behind `hops` proxies, each of which appends the address it saw
 * to the header, the entry the outermost trusted proxy wrote, counted from the right: what a client wrote itself is
 * further left and never read. A header shorter than the hops counts as far as it goes. "local" when called without
 * a server (tests).
 */
export function clientAddress(c: Context, trust: TrustedProxies): string {
  const info = c.env as Deno.ServeHandlerInfo<Deno.NetAddr> | undefined;
  const socket = info?.remoteAddr?.hostname ?? "local";
  if (trust.hops === 0) return socket;
  const written = forwardedFor(c.req.raw.headers, trust.header);
  const chain = [socket, ...written.reverse()];
  return chain[Math.min(trust.hops, chain.length - 1)].slice(0, MAX_ADDRESS_LENGTH);
}

/**
 * Warns once, at the first request that carries `X-Forwarded-For` or `Forwarded` while no proxy is trusted
 * (`TRUST_PROXY_HOPS=0`): the service is then most likely behind a proxy it was not told about, and counts every
 * client as that proxy's one address, whose failed sign-ins hold back everyone's (docs/production.md, "Behind a
 * reverse proxy"). Once per app, not per request: a log line per request would drown the others. A check called on
 * every request (app.ts), not a layer of the chain of its own: once it has warned, or with a proxy trusted, it is one
 * comparison.
 */
export function warnUntrustedForwarding(trust: TrustedProxies): (c: Context) => void {
  let warned = trust.hops > 0;
  return (c) => {
    if (warned) return;
    const header = ["x-forwarded-for", "forwarded"].find((name) => c.req.raw.headers.has(name));
    if (!header) return;
    warned = true;
    log.warn(
      "a request carries a forwarding header but TRUST_PROXY_HOPS=0: behind a proxy, every client is " +
        "counted as the proxy's address by the sign-in throttle; set TRUST_PROXY_HOPS to the number of proxies " +
        "in front (docs/production.md, Behind a reverse proxy)",
      { header },
    );
  };
}

/** The addresses a header lists, left to right, without ports, brackets or quotes. */
export function forwardedFor(headers: Headers, header: TrustedProxies["header"]): string[] {
  const value = headers.get(header); // repeated headers arrive joined by ", "
  if (!value) return [];
  const entries = header === "forwarded"
    ? value.split(",").map((element) => /(?:^|;)\s*for\s*=\s*("[^"]*"|[^;\s]*)/i.exec(element)?.[1] ?? "")
    : value.split(",");
  return entries.map(bareAddress).filter((a) => a !== "");
}

/** `"[2001:db8::1]:443"` → `2001:db8::1`, `203.0.113.9:1234` → `203.0.113.9`. */
function bareAddress(entry: string): string {
  const text = entry.trim().replace(/^"|"$/g, "");
  const bracketed = /^\[([^\]]*)\](?::\d+)?$/.exec(text);
  if (bracketed) return bracketed[1].toLowerCase();
  const v4WithPort = /^(\d{1,3}(?:\.\d{1,3}){3}):\d+$/.exec(text);
  return (v4WithPort ? v4WithPort[1] : text).toLowerCase();
}
