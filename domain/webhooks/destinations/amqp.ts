/**
 * The RabbitMQ transport (AMQP 0-9-1, docs/webhooks.md, "Destinations", "RabbitMQ"): `amqp://` and `amqps://` URLs
 * whose path is the vhost, a destination naming an exchange and a routing key, and a connection that publishes each
 * delivery on one confirm channel and waits for the broker's confirm. Its own file because it is the only code that
 * speaks to RabbitMQ (through amqplib) and turns the broker's answers into BrokerFailures safe to show.
 */

import { raceAbort } from "../../basics/abort.ts";
import { Buffer } from "node:buffer";
import net from "node:net";
import amqp from "amqplib";
import type { ChannelModel, ConfirmChannel, Message } from "amqplib";
import { BLANK, type ErrorBag, invalidFormat } from "../../basics/errors.ts";
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

/** AMQP's short strings (exchange, routing key, vhost) hold at most 255 bytes. */
const MAX_SHORT_STRING_BYTES = 255;
export const MAX_EXCHANGE_CHARS = 255;
/** The routing key template's bound: room left for the event type that fills `{type}` within 255 bytes. */
export const MAX_ROUTING_KEY_TEMPLATE_CHARS = 200;
export const DEFAULT_ROUTING_KEY = "{type}";
/** Seconds between heartbeats asked of the broker: a dead link is noticed within about two of them. */
const HEARTBEAT_SECONDS = 30;
/** How long `close` waits for the broker's close-ok before dropping the socket. */
const CLOSE_WAIT_MS = 1_000;

const bytes = (text: string) => new TextEncoder().encode(text).length;
// deno-lint-ignore no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;

/** The exchange as a sentence's subject: the default exchange ("") has no name to show. */
const exchangeName = (exchange: string) => exchange === "" ? "the default exchange" : `exchange ${exchange}`;

function describe(destination: Destination, type?: string): string {
  const exchange = String(destination.exchange ?? "");
  const template = String(destination.routing_key ?? DEFAULT_ROUTING_KEY);
  return `${exchangeName(exchange)}, key ${type === undefined ? template : fillType(template, type)}`;
}

function parsePath(errors: ErrorBag, pathname: string): string {
  const expected = invalidFormat(
    "amqp://host:port/vhost, the vhost one path segment with each / in it written %2F",
    "amqps://mq.example:5671/%2F",
  );
  if (pathname === "" || pathname === "/") return "/";
  const encoded = pathname.slice(1);
  if (encoded.includes("/")) {
    errors.add("url", expected);
    return "/";
  }
  let vhost: string;
  try {
    vhost = decodeURIComponent(encoded);
  } catch {
    errors.add("url", expected);
    return "/";
  }
  if (bytes(vhost) > MAX_SHORT_STRING_BYTES || CONTROL.test(vhost)) {
    errors.add(
      "url",
      `names a vhost RabbitMQ cannot have (at most ${MAX_SHORT_STRING_BYTES} bytes, no control characters)`,
    );
  }
  return vhost;
}

function checkDestination(errors: ErrorBag, destination: Record<string, unknown>): void {
  const exchange = destination.exchange;
  if (exchange === undefined || exchange === null) errors.add("destination.exchange", BLANK);
  else if (typeof exchange !== "string") {
    errors.add("destination.exchange", 'must be a string ("" for the default exchange)');
  } else if (exchange.length > MAX_EXCHANGE_CHARS || bytes(exchange) > MAX_SHORT_STRING_BYTES) {
    errors.add("destination.exchange", `is too long (maximum is ${MAX_EXCHANGE_CHARS} characters)`);
  } else if (CONTROL.test(exchange)) errors.add("destination.exchange", "must not contain control characters");
  else if (exchange.includes("{type}")) {
    errors.add("destination.exchange", "cannot contain {type}: only routing_key is filled with the event type");
  }

  const key = destination.routing_key;
  if (key === undefined || key === null) return;
  if (typeof key !== "string") errors.add("destination.routing_key", "must be a string");
  else if (key.length > MAX_ROUTING_KEY_TEMPLATE_CHARS) {
    errors.add("destination.routing_key", `is too long (maximum is ${MAX_ROUTING_KEY_TEMPLATE_CHARS} characters)`);
  } else if (CONTROL.test(key)) errors.add("destination.routing_key", "must not contain control characters");
}

function storedDestination(destination: Record<string, unknown>): Destination {
  const key = destination.routing_key;
  return {
    exchange: String(destination.exchange ?? ""),
    routing_key: typeof key === "string" ? key : DEFAULT_ROUTING_KEY,
  };
}

/**
 * A reason for a failed connection that names no address: amqplib's and the socket's messages often hold the address
 * ("connect ECONNREFUSED 10.0.0.7:5672"), so only codes and known phrases are kept.
 */
function lostReason(err: unknown): string {
  const e = err as { code?: unknown; message?: unknown } | null;
  const message = typeof e?.message === "string" ? e.message : "";
  // amqplib's own connect timeout is an Error without a code
  const code = typeof e?.code === "string" ? e.code : message.match(/^connect (E[A-Z]+)$/)?.[1] ?? "";
  const socket = socketFailure(code ? { code } : err, "connecting");
  if (socket) return socket;
  if (/certificate|tls|ssl|handshake failure|peer/i.test(message)) return "TLS handshake failed";
  if (/Heartbeat timeout/.test(message)) return "connection lost: the broker missed its heartbeats";
  if (/Unexpected close|Socket closed abruptly/.test(message)) return "connection closed by the broker";
  const closed = message.match(/Connection closed: (\d{3}) \(([A-Z-]+)\)/);
  if (closed) return `connection closed by the broker: ${closed[1]} (${closed[2]})`;
  return code && /^[A-Z0-9_]+$/.test(code) ? `connection failed (${code})` : "connection failed";
}

/** What the broker's refusal during the opening handshake means; permanent ones disable the endpoint. */
function handshakeFailure(err: unknown): BrokerFailure {
  const message = err instanceof Error ? err.message : "";
  const terminated = message.match(/Handshake terminated by server: (\d{3})/);
  if (terminated?.[1] === "403") return new BrokerFailure("access refused: the broker rejected the credentials", true);
  if (terminated) return new BrokerFailure(`connection refused by the broker: ${terminated[1]}`, true);
  // RabbitMQ answers connection.open with connection.close (530 NOT_ALLOWED) when the vhost does not exist or the user
  // may not use it
  if (/Expected ConnectionOpenOk; got <ConnectionClose/.test(message)) {
    return new BrokerFailure("access refused: the vhost does not exist or the user has no access to it", true);
  }
  return new BrokerFailure(lostReason(err));
}

/** A channel the broker closed, for the publishes it took down: which of them it was about decides permanence. */
function channelFailure(closed: ChannelClose, exchange: string): BrokerFailure {
  const about = closed.exchange === undefined || closed.exchange === exchange;
  if (closed.code === 404 && about) {
    return new BrokerFailure(`not found: there is no ${exchangeName(exchange)} in the vhost`, true);
  }
  if (closed.code === 403 && about) {
    return new BrokerFailure(`access refused: the user may not publish to ${exchangeName(exchange)}`, true);
  }
  return new BrokerFailure(`channel closed by the broker: ${closed.code}${closed.about ? ` (${closed.about})` : ""}`);
}

type ChannelClose = { code: number; about: string; exchange?: string };
/** A confirm channel and, once the broker closed it, why. */
type OpenChannel = { channel: ConfirmChannel; closed: ChannelClose | null };

/** One publish waiting for its confirm; a basic.return for it arrives first and marks it. */
type Pending = {
  messageId: string;
  exchange: string;
  routingKey: string;
  returned: boolean;
  settle: (failure: BrokerFailure | null) => void;
};

class AmqpConnection implements BrokerConnection {
  #model: ChannelModel;
  #channel: Promise<OpenChannel> | null = null;
  #open = true;
  #lost: string | null = null;
  #blocked = false;
  /** Publishes awaiting their confirm, oldest first. */
  #pending: Pending[] = [];

  constructor(model: ChannelModel) {
    this.#model = model;
    model.on("error", (err) => this.#die(lostReason(err)));
    model.on("close", (err) => this.#die(err ? lostReason(err) : "connection closed"));
    model.on("blocked", () => this.#blocked = true);
    model.on("unblocked", () => this.#blocked = false);
  }

  get open(): boolean {
    return this.#open;
  }

  #die(reason: string) {
    this.#lost ??= reason;
    this.#open = false;
    this.#channel = null;
    const failure = new BrokerFailure(this.#lost);
    for (const pending of this.#pending.splice(0)) pending.settle(failure);
  }

  /** Resolves once the confirm channel is open. */
  async ready(): Promise<void> {
    await this.#confirmChannel();
  }

  /** The confirm channel, opened on first use and again after the broker closed the last one (a 404, say). */
  #confirmChannel(): Promise<OpenChannel> {
    if (this.#channel) return this.#channel;
    const opening = this.#model.createConfirmChannel().then((channel) => {
      const open: OpenChannel = { channel, closed: null };
      // 'error' comes before 'close' and before the channel fails its publishes' callbacks: they read it
      channel.on("error", (err: Error & { code?: number }) => {
        const about = err.message.match(/\(([A-Z-]+)\)/)?.[1] ?? "";
        const exchange = err.message.match(/(?:no exchange|access to exchange) '(.*)' in vhost/)?.[1];
        open.closed = { code: typeof err.code === "number" ? err.code : 0, about, exchange };
      });
      channel.on("close", () => {
        if (this.#channel === opening) this.#channel = null;
      });
      channel.on("return", (message: Message) => this.#returned(message));
      return open;
    });
    this.#channel = opening;
    opening.catch(() => {
      if (this.#channel === opening) this.#channel = null;
    });
    return opening;
  }

  /** An unroutable message came back: the oldest publish of it still waiting is the one (returns precede confirms). */
  #returned(message: Message) {
    const { exchange, routingKey } = message.fields;
    const messageId = message.properties.messageId;
    const pending = this.#pending.find((p) =>
      !p.returned && p.messageId === messageId && p.exchange === exchange && p.routingKey === routingKey
    );
    if (pending) pending.returned = true;
  }

  /** Why a publish on `open` failed without a nack: the connection lost, or the broker closing the channel. */
  #closedFailure(open: OpenChannel, exchange: string): BrokerFailure {
    if (!this.#open) return new BrokerFailure(this.#lost ?? "connection closed");
    return open.closed ? channelFailure(open.closed, exchange) : new BrokerFailure("channel closed");
  }

  async publish(destination: Destination, message: OutgoingMessage, signal: AbortSignal): Promise<Acknowledgement> {
    const exchange = String(destination.exchange ?? "");
    const routingKey = fillType(String(destination.routing_key ?? DEFAULT_ROUTING_KEY), message.type);
    if (bytes(routingKey) > MAX_SHORT_STRING_BYTES) {
      throw new BrokerFailure(`routing key too long: more than ${MAX_SHORT_STRING_BYTES} bytes once {type} is filled`);
    }
    if (signal.aborted) throw abortFailure(signal, false);
    if (!this.#open) throw new BrokerFailure(this.#lost ?? "connection closed");

    let open: OpenChannel;
    try {
      open = await raceAbort(this.#confirmChannel(), signal, (s) => abortFailure(s, false));
    } catch (err) {
      if (err instanceof BrokerFailure) throw err;
      throw new BrokerFailure(this.#open ? "could not open a channel" : this.#lost ?? "connection closed");
    }

    return await new Promise<Acknowledgement>((resolve, reject) => {
      const pending: Pending = {
        messageId: message.id,
        exchange,
        routingKey,
        returned: false,
        settle: (failure) => {
          const at = this.#pending.indexOf(pending);
          if (at < 0) return; // settled already (a return, a close, then the channel's own callback)
          this.#pending.splice(at, 1);
          signal.removeEventListener("abort", onAbort);
          if (failure) reject(failure);
          else resolve({ answer: `confirmed: ${describe(destination, message.type)}` });
        },
      };
      const onAbort = () => {
        // the confirm may still come: the pending stays so a late return or confirm finds it, and is then dropped
        signal.removeEventListener("abort", onAbort);
        reject(abortFailure(signal, this.#blocked));
      };
      signal.addEventListener("abort", onAbort);
      this.#pending.push(pending);
      try {
        open.channel.publish(
          exchange,
          routingKey,
          Buffer.from(message.body),
          {
            mandatory: true,
            persistent: true,
            contentType: "application/json",
            messageId: message.id,
            headers: message.headers,
          },
          (err: unknown) => {
            if (err) {
              const nacked = err instanceof Error && err.message === "message nacked";
              pending.settle(
                nacked
                  ? new BrokerFailure("refused by the broker (nack): the message was not taken")
                  : this.#closedFailure(open, exchange),
              );
            } else if (pending.returned) {
              pending.settle(
                new BrokerFailure(
                  `unroutable: ${exchangeName(exchange)} has no queue bound for routing key ${routingKey}`,
                ),
              );
            } else pending.settle(null);
          },
        );
      } catch (err) {
        pending.settle(
          err instanceof RangeError
            ? new BrokerFailure("message too large: its headers exceed what AMQP can carry")
            : this.#closedFailure(open, exchange),
        );
      }
    });
  }

  async close(): Promise<void> {
    if (!this.#open) return;
    this.#lost ??= "connection closed";
    const closing = this.#model.close().catch(() => {});
    let timer: ReturnType<typeof setTimeout> | undefined;
    const waited = await Promise.race([
      closing.then(() => true),
      new Promise<boolean>((resolve) => timer = setTimeout(() => resolve(false), CLOSE_WAIT_MS)),
    ]);
    clearTimeout(timer);
    if (!waited) {
      (this.#model.connection as unknown as { stream?: { destroy(): void } }).stream?.destroy();
    }
    this.#die("connection closed");
  }
}

function abortFailure(signal: AbortSignal, blocked: boolean): BrokerFailure {
  const reason = signal.reason as { name?: string } | undefined;
  const timedOut = reason?.name === "TimeoutError";
  const why = blocked ? ": the broker is blocking publishers (a resource alarm)" : "";
  return new BrokerFailure(timedOut ? `timeout: the broker did not confirm in time${why}` : `aborted${why}`);
}

async function connect(
  target: BrokerTarget,
  credentials: BrokerCredentials,
  opts: ConnectOptions,
): Promise<BrokerConnection> {
  if (credentials && !("username" in credentials)) {
    throw new BrokerFailure("RabbitMQ takes a username and password, not a token", true);
  }
  const connecting = amqp.connect(
    {
      protocol: target.secure ? "amqps" : "amqp",
      hostname: opts.address,
      port: target.port,
      // amqplib decodes the vhost once more: encoding it keeps a `%` in its name
      vhost: encodeURIComponent(target.path || "/"),
      heartbeat: HEARTBEAT_SECONDS,
      // none given: RabbitMQ's default user, as a URL without user info means to amqplib
      ...(credentials ? { username: credentials.username, password: credentials.password } : {}),
    },
    {
      timeout: opts.timeoutMs,
      ...(target.secure && !net.isIP(target.host) ? { servername: target.host } : {}),
      ...(opts.ca ? { ca: opts.ca } : {}),
      clientProperties: { connection_name: opts.clientId },
    },
  );
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timedOut = new Promise<never>((_, reject) =>
    timer = setTimeout(
      () => reject(new BrokerFailure(`timeout: no connection within ${opts.timeoutMs} ms`)),
      opts.timeoutMs,
    )
  );
  // the confirm channel is opened with the connection, within the same time: the first publish does not wait for it
  const opening = connecting.then(async (model) => {
    const connection = new AmqpConnection(model);
    try {
      await connection.ready();
    } catch {
      await connection.close();
      throw new BrokerFailure("could not open a channel");
    }
    return connection;
  }, (err) => {
    throw err instanceof BrokerFailure ? err : handshakeFailure(err);
  });
  try {
    return await Promise.race([opening, timedOut]);
  } catch (err) {
    // a connection that opens after the deadline is closed at once
    opening.then((late) => late.close(), () => {});
    throw err;
  } finally {
    clearTimeout(timer);
  }
}

export const amqpTransport: Transport = {
  name: "amqp",
  schemes: { plain: "amqp", tls: "amqps" },
  defaultPort: (secure) => secure ? 5671 : 5672,
  destinationKeys: ["exchange", "routing_key"],
  credentials: ["userpass"],
  parsePath,
  checkDestination,
  storedDestination,
  describe,
  connect,
};
