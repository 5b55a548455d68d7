/**
 * The NATS JetStream transport (docs/webhooks.md, "NATS JetStream"): `nats://` and `tls://` URLs, a `subject`
 * destination, one JetStream publish per delivery acknowledged by the stream that takes the subject. Its own file as
 * each broker's protocol is (transport.ts says the shape).
 */

import { raceAbort } from "../../basics/abort.ts";
import { isIP } from "node:net";
import {
  connect as natsConnect,
  errors,
  headers,
  type NatsConnection,
  type NodeConnectionOptions,
} from "@nats-io/transport-node";
import { NodeTransport } from "@nats-io/transport-node/lib/node_transport.js";
import { jetstream, JetStreamApiError, type JetStreamClient } from "@nats-io/jetstream";
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

const SUBJECT_MAX = 255;

/**
 * How long the library itself waits for a PubAck: only a backstop, as the attempt's signal ends the wait first; the
 * library's own default (5 s) would cut attempts the engine allows to take longer.
 */
const ACK_BACKSTOP_MS = 60_000;

/** Why `subject` is no NATS subject a publish may use, or null when it is one. */
function subjectProblem(subject: string): string | null {
  if (/\s/.test(subject)) return "can't contain spaces";
  if (/[*>]/.test(subject)) return "can't contain the wildcards * or >";
  if (subject.split(".").some((token) => token === "")) {
    return "can't have an empty token (a leading, trailing or double .)";
  }
  return null;
}

const encoder = new TextEncoder();

/**
 * Keeps an error listener on every socket the NATS client opens. The client drops all of a socket's listeners when it
 * closes it (`removeAllListeners`), and under Deno a read that fails after that (ECONNRESET from a peer that went away
 * as the socket closed) is still emitted as an `error` event: with no listener it would end the process. Patched on
 * the class, once, as the client offers no way to hand it a socket.
 */
function keepSocketErrorsHandled(): void {
  const ignore = () => {};
  const guard = <S extends { on(ev: "error", fn: () => void): unknown; removeAllListeners(ev?: string): S }>(
    socket: S,
  ): S => {
    socket.on("error", ignore);
    const removeAll = socket.removeAllListeners;
    // with no argument it removes every listener: passing `undefined` on would remove none
    socket.removeAllListeners = function (this: S, ...args: [string?]) {
      const result = removeAll.apply(this, args);
      if (args.length === 0 || args[0] === "error") this.on("error", ignore);
      return result;
    };
    return socket;
  };
  const proto = NodeTransport.prototype as NodeTransport & { webhooksGuarded?: true };
  if (proto.webhooksGuarded) return;
  proto.webhooksGuarded = true;
  const { dial, startTLS } = proto;
  proto.dial = async function (this: NodeTransport, hp) {
    return guard(await dial.call(this, hp));
  };
  proto.startTLS = async function (this: NodeTransport) {
    return guard(await startTLS.call(this));
  };
}
keepSocketErrorsHandled();

function hostForTls(host: string): { servername?: string } {
  return isIP(host) ? {} : { servername: host };
}

/** A failure to connect, said without the address or the credentials. */
function connectFailure(error: unknown, credentials: BrokerCredentials, timeoutMs: number): BrokerFailure {
  if (error instanceof errors.AuthorizationError) {
    return new BrokerFailure(
      credentials
        ? "access refused: the broker rejected the credentials (Authorization Violation)"
        : "access refused: the broker asks for credentials and none were given (Authorization Violation)",
      true,
    );
  }
  if (error instanceof errors.TimeoutError) {
    return new BrokerFailure(`timeout: the broker did not complete the connection within ${timeoutMs} ms`);
  }
  if (error instanceof errors.ConnectionError && /does not support 'tls'/.test(error.message)) {
    return new BrokerFailure("the broker offers no TLS: a tls:// URL needs a NATS server with TLS configured");
  }
  return new BrokerFailure(socketFailure(error, "connecting") ?? `connection failed (${errorName(error)})`);
}

const errorName = (error: unknown) => error instanceof Error ? error.name : "unknown error";

/** A failed publish of `subject`, said plainly; permanent when no retry can help (no stream, no permission). */
function publishFailure(error: unknown, subject: string): BrokerFailure {
  if (error instanceof BrokerFailure) return error;
  const name = errorName(error);
  if (name === "JetStreamNotEnabled" || (error instanceof errors.RequestError && error.isNoResponders())) {
    return new BrokerFailure(`no JetStream stream takes subject ${subject}`, true);
  }
  if (
    error instanceof errors.PermissionViolationError ||
    (error as Error)?.cause instanceof errors.PermissionViolationError
  ) {
    return new BrokerFailure(
      `access refused: the broker does not let these credentials publish to subject ${subject} (Permissions Violation)`,
      true,
    );
  }
  if (error instanceof JetStreamApiError) {
    return new BrokerFailure(`the stream refused the message: ${error.message} (JetStream error ${error.code})`);
  }
  if (error instanceof errors.TimeoutError) {
    return new BrokerFailure(`timeout: no PubAck within ${ACK_BACKSTOP_MS} ms`);
  }
  if (error instanceof errors.ClosedConnectionError || error instanceof errors.RequestError) {
    return new BrokerFailure("connection lost before the broker acknowledged the message");
  }
  if (name === "MaxPayloadExceeded" || /max_payload|payload/i.test((error as Error)?.message ?? "")) {
    return new BrokerFailure("the message is larger than the broker's max_payload");
  }
  return new BrokerFailure(`publish failed (${name})`);
}

function abortFailure(signal: AbortSignal): BrokerFailure {
  const reason = signal.reason as { name?: string } | undefined;
  return reason?.name === "TimeoutError"
    ? new BrokerFailure("timeout: no PubAck before the attempt's time ran out")
    : new BrokerFailure("aborted before the broker acknowledged the message");
}

class NatsConnectionHandle implements BrokerConnection {
  private closed = false;
  private readonly js: JetStreamClient;

  constructor(private readonly nc: NatsConnection) {
    this.js = jetstream(nc, { timeout: ACK_BACKSTOP_MS });
    // reconnect is off: a lost socket closes the connection for good and the keeper opens another
    nc.closed().then(() => this.closed = true, () => this.closed = true);
  }

  get open(): boolean {
    return !this.closed && !this.nc.isClosed() && !this.nc.isDraining();
  }

  async publish(destination: Destination, message: OutgoingMessage, signal: AbortSignal): Promise<Acknowledgement> {
    if (signal.aborted) throw abortFailure(signal);
    const subject = fillType(String(destination.subject), message.type);
    const problem = subjectProblem(subject);
    if (problem) {
      throw new BrokerFailure(`subject ${subject} is no valid NATS subject: it ${problem}`, true);
    }
    if (!this.open) throw new BrokerFailure("connection lost before the broker acknowledged the message");
    const h = headers();
    for (const [key, value] of Object.entries(message.headers)) h.set(key, value);
    try {
      // msgID is the stream's dedupe id: an attempt retried within the duplicate window is stored once
      const ack = await raceAbort(
        this.js.publish(subject, encoder.encode(message.body), { headers: h, msgID: message.id }),
        signal,
        abortFailure, // the publish may still be acknowledged later
      );
      return { answer: `PubAck stream ${ack.stream} seq ${ack.seq}${ack.duplicate ? " duplicate" : ""}` };
    } catch (error) {
      throw publishFailure(error, subject);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      this.nc.close().catch(() => {}),
      new Promise<void>((resolve) => timer = setTimeout(resolve, 1000)),
    ]);
    clearTimeout(timer);
  }
}

async function connect(
  target: BrokerTarget,
  credentials: BrokerCredentials,
  opts: ConnectOptions,
): Promise<BrokerConnection> {
  const host = isIP(opts.address) === 6 ? `[${opts.address}]` : opts.address;
  const options: NodeConnectionOptions = {
    servers: `${host}:${target.port}`,
    name: opts.clientId,
    timeout: opts.timeoutMs,
    // no silent buffering across reconnects: a publish while the socket is down must fail, not wait in a queue
    reconnect: false,
    maxReconnectAttempts: 0,
    // a peer that vanished without a reset is noticed within a minute or so, and `open` turns false
    pingInterval: 20_000,
    maxPingOut: 2,
    ...(credentials && "token" in credentials ? { token: credentials.token } : {}),
    ...(credentials && "username" in credentials ? { user: credentials.username, pass: credentials.password } : {}),
    ...(target.secure ? { tls: { ...hostForTls(target.host), ...(opts.ca ? { ca: opts.ca.join("\n") } : {}) } } : {}),
  };
  try {
    return new NatsConnectionHandle(await natsConnect(options));
  } catch (error) {
    throw connectFailure(error, credentials, opts.timeoutMs);
  }
}

export const natsTransport: Transport = {
  name: "nats",
  schemes: { plain: "nats", tls: "tls" },
  defaultPort: () => 4222,
  destinationKeys: ["subject"],
  credentials: ["userpass", "token"],

  parsePath(errors: ErrorBag, pathname: string): string {
    if (pathname !== "" && pathname !== "/") errors.add("url", "a nats:// or tls:// URL has no path");
    return "";
  },

  checkDestination(errors: ErrorBag, destination: Record<string, unknown>): void {
    const subject = destination.subject;
    if (subject === undefined || subject === null || subject === "") {
      errors.add("destination.subject", BLANK);
      return;
    }
    if (typeof subject !== "string") {
      errors.add("destination.subject", "must be a string");
      return;
    }
    if (subject.length > SUBJECT_MAX) {
      errors.add("destination.subject", `is too long (at most ${SUBJECT_MAX} characters)`);
      return;
    }
    const problem = subjectProblem(fillType(subject, "type"));
    if (problem) errors.add("destination.subject", `is not a valid NATS subject: it ${problem}`);
  },

  storedDestination(destination: Record<string, unknown>): Destination {
    return { subject: String(destination.subject) };
  },

  describe(destination: Destination, type?: string): string {
    const subject = String(destination.subject);
    return `subject ${type === undefined ? subject : fillType(subject, type)}`;
  },

  connect,
};
