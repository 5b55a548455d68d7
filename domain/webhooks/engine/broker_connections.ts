/**
 * The broker connections of one process (docs/webhooks.md, "Destinations"): one per company, broker address (transport,
 * TLS, host, port, vhost or database) and credential, opened on first use, reused by every publish to it, opened
 * again after a failure, closed when idle, and at most `perCompany` open for one company, so one tenant's endpoints
 * cannot hold the process's sockets. Every (re)connect resolves the host and checks its addresses with the URL guard,
 * as an HTTP attempt does, and connects to the checked address only.
 */

import { raceAbort } from "../../basics/abort.ts";
import { createHash } from "node:crypto";
import { log } from "../../basics/log.ts";
import { checkedAddresses, type Resolver, systemResolver } from "../endpoints/url_guard.ts";
import {
  type Acknowledgement,
  type BrokerConnection,
  type BrokerCredentials,
  BrokerFailure,
  type BrokerTarget,
  type Destination,
  type OutgoingMessage,
  type Transport,
} from "../destinations/transport.ts";
import { TRANSPORTS } from "../destinations/registry.ts";

/** Broker connections one company may have open in one process. */
export const BROKER_CONNECTIONS_PER_COMPANY = 8;
/** A connection nobody published on for this long is closed. */
export const BROKER_IDLE_MS = 60_000;

export type BrokerConnectionsOptions = {
  allowPrivateUrls: boolean;
  /** How long opening a connection may take (the attempt's own timeout bounds it too). */
  connectTimeoutMs: number;
  /** Names this process in MQTT client ids: unique per instance. */
  processId: string;
  perCompany?: number;
  idleMs?: number;
  /** The operating system's resolver unless a test swaps it. */
  resolve?: Resolver;
  /** Certificate authorities trusted instead of the default ones: tests with their own TLS brokers. */
  ca?: string[];
  /** The transports by name; the registry's unless a test gives its own. */
  transports?: Partial<Record<string, Transport>>;
};

type Entry = {
  companyId: string;
  connection: Promise<BrokerConnection>;
  lastUsed: number;
  inUse: number;
};

export class BrokerConnections {
  readonly #entries = new Map<string, Entry>();
  readonly #sweep: ReturnType<typeof setInterval>;
  #opened = 0;

  constructor(private readonly opts: BrokerConnectionsOptions) {
    const idleMs = opts.idleMs ?? BROKER_IDLE_MS;
    this.#sweep = setInterval(() => this.#closeIdle(idleMs), Math.max(50, idleMs / 2));
    Deno.unrefTimer(this.#sweep);
  }

  /** Connections open (or opening) now, for one company or for all. */
  size(companyId?: string): number {
    if (companyId === undefined) return this.#entries.size;
    return [...this.#entries.values()].filter((e) => e.companyId === companyId).length;
  }

  /**
   * Publishes `message` over the company's connection to `target`, opening it first if needed. Resolves with the
   * broker's acknowledgement; rejects with a BrokerFailure (or a BlockedDestination from the URL guard) otherwise. A
   * connection the failure left closed is dropped, so the next attempt opens another.
   */
  async publish(
    companyId: string,
    target: BrokerTarget,
    credentials: BrokerCredentials,
    destination: Destination,
    message: OutgoingMessage,
    signal: AbortSignal,
  ): Promise<Acknowledgement> {
    const key = entryKey(companyId, target, credentials);
    const entry = this.#entries.get(key) ?? this.#open(key, companyId, target, credentials, signal);
    entry.inUse++;
    entry.lastUsed = Date.now();
    try {
      const connection = await raceAbort(entry.connection, signal);
      if (!connection.open) throw new BrokerFailure("connection lost");
      return await connection.publish(destination, message, signal);
    } catch (err) {
      // a connection that failed, or one this publish found closed, is not kept for the next attempt
      const connection = await entry.connection.catch(() => null);
      if (!connection?.open) this.#drop(key, entry);
      throw err;
    } finally {
      entry.inUse--;
      entry.lastUsed = Date.now();
    }
  }

  /** Closes every connection (the worker stops). */
  async close(): Promise<void> {
    clearInterval(this.#sweep);
    const entries = [...this.#entries.values()];
    this.#entries.clear();
    await Promise.all(entries.map((e) => e.connection.then((c) => c.close(), () => {})));
  }

  #open(
    key: string,
    companyId: string,
    target: BrokerTarget,
    credentials: BrokerCredentials,
    signal: AbortSignal,
  ): Entry {
    this.#makeRoom(companyId);
    const transport = (this.opts.transports ?? TRANSPORTS)[target.transport];
    const connection = (async () => {
      if (!transport) throw new BrokerFailure(`refused: this release does not deliver to ${target.transport}`, true);
      const host = target.host.includes(":") ? `[${target.host}]` : target.host;
      const addresses = await raceAbort(
        checkedAddresses(new URL(`http://${host}`), {
          resolve: this.opts.resolve ?? systemResolver,
          allowPrivate: this.opts.allowPrivateUrls,
        }),
        signal,
      );
      return await transport.connect(target, credentials, {
        address: addresses[0],
        ca: this.opts.ca,
        clientId: `payments-${this.opts.processId.slice(0, 8)}-${++this.#opened}`,
        timeoutMs: this.opts.connectTimeoutMs,
      });
    })();
    // a failed open is reported by the publish that awaits it; this only keeps it from counting as unhandled
    connection.catch(() => {});
    const entry: Entry = { companyId, connection, lastUsed: Date.now(), inUse: 0 };
    this.#entries.set(key, entry);
    return entry;
  }

  /** Closes the company's least recently used idle connection when it has its cap open; refuses when none is idle. */
  #makeRoom(companyId: string) {
    const cap = this.opts.perCompany ?? BROKER_CONNECTIONS_PER_COMPANY;
    const own = [...this.#entries].filter(([, e]) => e.companyId === companyId);
    if (own.length < cap) return;
    const idle = own.filter(([, e]) => e.inUse === 0).sort(([, a], [, b]) => a.lastUsed - b.lastUsed)[0];
    if (!idle) {
      throw new BrokerFailure(
        `refused: the company's ${cap} broker connections of this instance are all in use (the attempt is retried)`,
      );
    }
    this.#drop(idle[0], idle[1]);
  }

  #drop(key: string, entry: Entry) {
    if (this.#entries.get(key) !== entry) return;
    this.#entries.delete(key);
    entry.connection.then((c) => c.close(), () => {});
  }

  #closeIdle(idleMs: number) {
    const now = Date.now();
    for (const [key, entry] of this.#entries) {
      if (entry.inUse === 0 && now - entry.lastUsed >= idleMs) {
        this.#drop(key, entry);
        log.debug("broker connection closed: idle", { idle_ms: now - entry.lastUsed });
      }
    }
  }
}

/** A connection's key: the company, the broker's address and a digest of the credential (never the credential). */
function entryKey(companyId: string, t: BrokerTarget, credentials: BrokerCredentials): string {
  const credential = credentials ? createHash("sha256").update(JSON.stringify(credentials)).digest("hex") : "-";
  return [companyId, t.transport, t.secure ? "tls" : "plain", t.host.toLowerCase(), t.port, t.path, credential].join(
    "\u0000",
  );
}
