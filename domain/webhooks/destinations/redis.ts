/**
 * The Redis Streams transport (docs/webhooks.md, "Redis Streams"): a delivery is one stream entry added with XADD,
 * its first field `body`, then one field per header. Its own file because it is one broker protocol of
 * transport.ts, with its own client library (ioredis) and its own list of which Redis errors are permanent.
 */

import net from "node:net";
import { Redis } from "ioredis";
import { BLANK, type ErrorBag } from "../../basics/errors.ts";
import {
  type Acknowledgement,
  type BrokerConnection,
  type BrokerCredentials,
  BrokerFailure,
  type BrokerTarget,
  type ConnectOptions,
  type Destination,
  fillType,
  type OutgoingMessage,
  socketFailure,
  type Transport,
} from "./transport.ts";

const MAX_STREAM_LENGTH = 255;
const MAX_MAXLEN = 10_000_000;
/** Redis's default `databases`: a URL names one of 0..15. */
const DATABASES = 16;
const CLOSE_WAIT_MS = 500;

export const redisTransport: Transport = {
  name: "redis",
  schemes: { plain: "redis", tls: "rediss" },
  defaultPort: () => 6379,
  destinationKeys: ["stream", "maxlen"],
  credentials: ["userpass"],

  parsePath(errors: ErrorBag, pathname: string): string {
    if (pathname === "" || pathname === "/") return "0";
    const db = /^\/(0|[1-9][0-9]?)$/.exec(pathname)?.[1];
    if (db !== undefined && Number(db) < DATABASES) return db;
    errors.add("url", `must name a Redis database 0 to ${DATABASES - 1} as its path (redis://host:6379/0), or none`);
    return "0";
  },

  checkDestination(errors: ErrorBag, destination: Record<string, unknown>): void {
    const stream = destination.stream;
    if (stream === undefined || stream === null || (typeof stream === "string" && stream.trim() === "")) {
      errors.add("destination.stream", BLANK);
    } else if (typeof stream !== "string") {
      errors.add("destination.stream", "must be a string");
    } else if (stream.length > MAX_STREAM_LENGTH) {
      errors.add("destination.stream", `is too long (maximum is ${MAX_STREAM_LENGTH} characters)`);
    } else if (/\p{Cc}/u.test(stream)) {
      // a key is any bytes to Redis, but one a console or a log cannot show is a mistake
      errors.add("destination.stream", "must not contain control characters");
    }
    const maxlen = destination.maxlen;
    if (maxlen !== undefined && maxlen !== null) {
      if (typeof maxlen !== "number" || !Number.isInteger(maxlen) || maxlen < 1 || maxlen > MAX_MAXLEN) {
        errors.add("destination.maxlen", `must be a whole number from 1 to ${MAX_MAXLEN.toLocaleString("en")}`);
      }
    }
  },

  storedDestination(destination: Record<string, unknown>): Destination {
    const stored: Destination = { stream: String(destination.stream) };
    if (typeof destination.maxlen === "number") stored.maxlen = destination.maxlen;
    return stored;
  },

  describe(destination: Destination, type?: string): string {
    const stream = String(destination.stream);
    const trimmed = destination.maxlen ? ` (trimmed to about ${destination.maxlen} entries)` : "";
    return `stream ${type === undefined ? stream : fillType(stream, type)}${trimmed}`;
  },

  connect,
};

async function connect(
  target: BrokerTarget,
  credentials: BrokerCredentials,
  opts: ConnectOptions,
): Promise<BrokerConnection> {
  if (credentials && "token" in credentials) {
    throw new BrokerFailure("Redis takes a username and password, not a token", true);
  }
  const client = new Redis({
    host: opts.address,
    port: target.port,
    tls: target.secure
      ? {
        // SNI and the certificate check use the host the URL names; an IP literal is checked as itself
        ...(net.isIP(target.host) ? {} : { servername: target.host }),
        ...(opts.ca ? { ca: opts.ca } : {}),
        rejectUnauthorized: true,
      }
      : undefined,
    lazyConnect: true,
    connectTimeout: opts.timeoutMs,
    // A command while disconnected fails at once instead of waiting in a queue for a reconnection that the keeper
    // (not the library) makes: the connection ends for good on its first failure, and `open` turns false.
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    reconnectOnError: () => false,
    autoResendUnfulfilledCommands: false,
    autoResubscribe: false,
    // AUTH and SELECT are sent below, so that their refusal is the answer read, not a generic "connection closed";
    // no INFO ready check and no CLIENT SETINFO: a user allowed only XADD still connects
    enableReadyCheck: false,
    disableClientInfo: true,
    // RESP2: no HELLO, so Redis 5 still connects. Without RESP3 there are no maintenance notifications either, whose
    // MOVING would send the client to an address the URL guard never checked; disabled besides, in case of RESP3
    protocol: 2,
    maintNotifications: "disabled",
  });
  let lastError: unknown = null;
  // a late error (a reset after a publish) must not crash the process; the close it precedes ends the connection
  client.on("error", (error) => lastError = error);

  let timer: ReturnType<typeof setTimeout> | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new BrokerFailure(`timeout: no connection within ${opts.timeoutMs} ms`)),
      opts.timeoutMs,
    );
  });
  try {
    await Promise.race([
      (async () => {
        await client.connect().catch((error) => {
          throw lastError ?? error;
        });
        if (credentials) await client.call("AUTH", credentials.username, credentials.password);
        if (target.path !== "" && target.path !== "0") await client.select(Number(target.path));
      })(),
      timedOut,
    ]);
  } catch (error) {
    client.disconnect();
    throw error instanceof BrokerFailure ? error : failureOf(error);
  } finally {
    clearTimeout(timer);
  }
  return new RedisConnection(client);
}

class RedisConnection implements BrokerConnection {
  #closed = false;

  constructor(readonly client: Redis) {}

  get open(): boolean {
    return !this.#closed && this.client.status === "ready";
  }

  async publish(destination: Destination, message: OutgoingMessage, signal: AbortSignal): Promise<Acknowledgement> {
    if (signal.aborted) throw abortFailure(signal);
    if (!this.open) throw new BrokerFailure("connection lost: the connection to the broker is closed");
    const key = fillType(String(destination.stream), message.type);
    const args: (string | number)[] = [key];
    // `~`: Redis trims whole nodes of the stream when it can, far cheaper than an exact MAXLEN on every add
    if (destination.maxlen) args.push("MAXLEN", "~", Number(destination.maxlen));
    args.push("*", "body", message.body);
    for (const [name, value] of Object.entries(message.headers)) args.push(name, value);

    const added = this.client.call("XADD", ...args) as Promise<string>;
    let onAbort = () => {};
    const aborted = new Promise<never>((_, reject) => {
      onAbort = () => {
        // Redis answers a connection's commands in order: a reply that has not come holds up every publish behind
        // it, so the connection is given up and the keeper opens another
        this.#closed = true;
        this.client.disconnect();
        reject(abortFailure(signal));
      };
      signal.addEventListener("abort", onAbort, { once: true });
    });
    try {
      const id = await Promise.race([added, aborted]);
      return { answer: `XADD id ${id}` };
    } catch (error) {
      if (error instanceof BrokerFailure) throw error;
      throw failureOf(error, key);
    } finally {
      signal.removeEventListener("abort", onAbort);
      added.catch(() => {}); // an answer that comes after the abort, or the connection's end, is not waited for
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      if (this.client.status === "ready") {
        await Promise.race([
          this.client.quit().catch(() => {}),
          new Promise((resolve) => timer = setTimeout(resolve, CLOSE_WAIT_MS)),
        ]);
      }
    } finally {
      clearTimeout(timer);
      this.client.disconnect();
    }
  }
}

function abortFailure(signal: AbortSignal): BrokerFailure {
  const reason = signal.reason as { name?: string } | undefined;
  return new BrokerFailure(
    reason?.name === "TimeoutError"
      ? "timeout: the broker did not acknowledge the message in time"
      : "aborted: the publish was abandoned before the broker answered",
  );
}

/**
 * Redis's error replies by their first word. Permanent: what no retry mends (the key holds another type, the
 * credentials or the user's rights are refused, the server cannot hold streams or is a cluster node the key is not
 * on); any other refusal (a read-only replica, a server loading or out of memory) is retried.
 */
function replyFailure(code: string, text: string, key?: string): BrokerFailure {
  const stream = key === undefined ? "" : ` ${key}`;
  switch (code) {
    case "WRONGTYPE":
      return new BrokerFailure(`wrong type: the key${stream} holds a value that is not a stream (WRONGTYPE)`, true);
    case "WRONGPASS":
      return new BrokerFailure("access refused: the broker rejected the credentials (WRONGPASS)", true);
    case "NOAUTH":
      return new BrokerFailure("access refused: the broker asks for credentials (NOAUTH)", true);
    case "NOPERM":
      return new BrokerFailure(`access refused: the user may not add to the stream${stream} (NOPERM)`, true);
    case "READONLY":
      return new BrokerFailure("read-only: the server is a replica and takes no writes (READONLY)");
    case "MOVED":
    case "ASK":
      return new BrokerFailure(
        `cluster: the stream${stream} lives on another node of a Redis Cluster, which is not supported (${code})`,
        true,
      );
  }
  if (code === "ERR" && /unknown command/i.test(text)) {
    return new BrokerFailure("the server has no streams: XADD needs Redis 5 or later", true);
  }
  if (code === "ERR" && /DB index is out of range/i.test(text)) {
    return new BrokerFailure("the URL's database number is out of the server's range", true);
  }
  // Redis's own texts name no address (MOVED and ASK, which do, are above); kept short all the same
  return new BrokerFailure(`the broker refused the message: ${text.slice(0, 200)}`);
}

function failureOf(error: unknown, key?: string): BrokerFailure {
  const name = (error as { name?: unknown })?.name;
  const message = String((error as { message?: unknown })?.message ?? "");
  if (name === "ReplyError") {
    const code = /^([A-Z]+)\b/.exec(message)?.[1] ?? "ERR";
    return replyFailure(code, message, key);
  }
  const socket = socketFailure(error, "connecting");
  if (socket) return new BrokerFailure(socket);
  // ioredis's "Connection is closed." and "Stream isn't writeable": the connection ended under the command
  return new BrokerFailure("connection lost: the broker closed the connection");
}
