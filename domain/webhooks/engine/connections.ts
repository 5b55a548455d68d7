/**
 * The keep-alive connections to webhook receivers, one agent per destination (docs/webhooks.md, "Connections"). Its own
 * file because the pool lives as long as the process, across attempts and endpoints, while sender.ts makes one attempt.
 */

import http from "node:http";
import https from "node:https";

/** Where a pooled connection goes: everything that must match for a connection to be used again. */
export type Destination = {
  secure: boolean;
  /** The host name the endpoint's URL names: TLS verifies the certificate against it. */
  host: string;
  port: number;
  /** The addresses the URL guard checked for this attempt: a connection is only ever opened to one of them. */
  addresses: string[];
  /** Certificate authorities trusted instead of the default ones (tests with their own TLS receivers). */
  ca?: string[];
  /**
   * The endpoint's client certificate and key, presented in the handshake (docs/webhooks.md, "Client certificates
   * (mTLS)"); `id` names the pair, so that a connection opened with one credential never carries another's attempts.
   */
  client?: { cert: string; key: string; id: string } | null;
};

export type ConnectionPoolOptions = {
  /**
   * A connection unused this long is closed, and a destination's agent with it: below the 5 s most servers keep an
   * idle connection open.
   */
  idleMs: number;
  /**
   * Idle connections kept per destination. Connections in use are not capped here: the endpoint's `max_concurrency`
   * and the worker's concurrency already bound the attempts in flight.
   */
  idlePerDestination: number;
  /** Destinations kept; past it the one unused longest is closed. */
  maxDestinations: number;
};

export const DEFAULT_POOL: ConnectionPoolOptions = { idleMs: 4_000, idlePerDestination: 32, maxDestinations: 1_000 };

/**
 * Keep-alive connections to webhook receivers, one HTTP agent per destination (docs/webhooks.md, "Connections"):
 * a delivery to an https receiver then costs one TLS handshake per connection, not one per attempt.
 *
 * The key holds the host name, the port, the scheme, the trusted authorities, the client certificate presented (if
 * any) and the addresses the URL guard checked, so a connection is never used for another host (another company's
 * endpoint on the same address included) or with another client certificate, and a host that now resolves elsewhere
 * gets connections of its own to the new, checked, addresses: the DNS pinning holds.
 * A connection the receiver closed while it sat idle fails the attempt that finds it (Node's client never sends a
 * POST twice), which is recorded and retried on the schedule like any failed attempt.
 */
export class ConnectionPool {
  readonly #agents = new Map<string, { agent: http.Agent; usedAt: number }>();
  readonly #options: ConnectionPoolOptions;
  #sweeper: ReturnType<typeof setInterval> | undefined;

  constructor(options: Partial<ConnectionPoolOptions> = {}) {
    this.#options = { ...DEFAULT_POOL, ...options };
  }

  /** The agent for `to`, made on first use. */
  agentFor(to: Destination): http.Agent {
    const key = JSON.stringify([
      to.secure,
      to.host,
      to.port,
      [...to.addresses].sort(),
      to.ca ?? null,
      to.client?.id ?? null,
    ]);
    const now = performance.now();
    const known = this.#agents.get(key);
    if (known) {
      known.usedAt = now;
      // most recently used last, so the first entry is the one to close when there are too many
      this.#agents.delete(key);
      this.#agents.set(key, known);
      return known.agent;
    }
    if (this.#agents.size >= this.#options.maxDestinations) {
      const [oldest, entry] = this.#agents.entries().next().value!;
      entry.agent.destroy();
      this.#agents.delete(oldest);
    }
    // a drainer sends, records, then sends again: its connection waits idle in between, and closing it there would
    // cost a handshake per attempt again
    // cost a handshake per attempt again; `timeout` closes a connection idle that long (an attempt in flight only
    // gets a 'timeout' event, which nothing listens to: the attempt's own timeout is the sender's)
    const options = {
      keepAlive: true,
      maxFreeSockets: this.#options.idlePerDestination,
      timeout: this.#options.idleMs,
    };
    const agent = to.secure
      ? new https.Agent(to.client ? { ...options, cert: to.client.cert, key: to.client.key } : options)
      : new http.Agent(options);
    this.#agents.set(key, { agent, usedAt: now });
    this.#sweep();
    return agent;
  }

  /** How many destinations have an agent (for tests and metrics). */
  get size(): number {
    return this.#agents.size;
  }

  /** Closes every connection; the pool can still be used afterwards. */
  close(): void {
    for (const { agent } of this.#agents.values()) agent.destroy();
    this.#agents.clear();
    clearInterval(this.#sweeper);
    this.#sweeper = undefined;
  }

  /** Closes the agents idle for `idleMs`, checking every half of it while any is open. */
  #sweep() {
    if (this.#sweeper !== undefined) return;
    this.#sweeper = setInterval(() => {
      const cutoff = performance.now() - this.#options.idleMs;
      for (const [key, { agent, usedAt }] of this.#agents) {
        if (usedAt <= cutoff && !busy(agent)) {
          agent.destroy();
          this.#agents.delete(key);
        }
      }
      if (this.#agents.size === 0) {
        clearInterval(this.#sweeper);
        this.#sweeper = undefined;
      }
    }, Math.max(10, this.#options.idleMs / 2));
    Deno.unrefTimer(this.#sweeper as unknown as number);
  }
}

/** Whether a request is on one of the agent's connections or waiting for one. */
function busy(agent: http.Agent): boolean {
  const pending = (lists: NodeJS.ReadOnlyDict<unknown[]>) => Object.values(lists).some((list) => list?.length);
  return pending(agent.sockets) || pending(agent.requests);
}
