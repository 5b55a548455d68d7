/**
 * What a broker transport is (docs/webhooks.md, "Destinations"): the shape every transport file of this folder
 * (amqp.ts, nats.ts, redis.ts, mqtt.ts) fills in, and the pieces they share: the target a URL names, the message a
 * delivery becomes, the broker's answer and the failure that carries a reason safe to show. A transport for another
 * broker (Kafka, SQS, ...) is one more file of this shape (docs/scaling.md, "Destinations without a broker here").
 */

import type { ErrorBag } from "../../basics/errors.ts";

/** The transports an endpoint's URL can name beside http(s); `http` is the plain webhook. */
export const BROKER_TRANSPORTS = ["amqp", "nats", "redis", "mqtt"] as const;
export type BrokerTransportName = (typeof BROKER_TRANSPORTS)[number];
export type TransportName = "http" | BrokerTransportName;

/** Where a broker listens, as the endpoint's URL says it (the host not yet resolved). */
export type BrokerTarget = {
  transport: BrokerTransportName;
  /** The TLS scheme (`amqps`, `tls`, `rediss`, `mqtts`). */
  secure: boolean;
  /** The host as written, without brackets for IPv6. */
  host: string;
  port: number;
  /** RabbitMQ: the vhost, decoded (`/` by default); Redis: the database number as text ("0" by default); "" else. */
  path: string;
};

/** The credentials the broker asks for, opened (never stored so: endpoints keep them sealed). */
export type BrokerCredentials = { username: string; password: string } | { token: string } | null;

/** A destination as stored: the transport's keys only (`{type}` not yet replaced). */
export type Destination = Record<string, string | number>;

/**
 * One delivery as a message: the bytes an HTTP receiver of the endpoint would get and the headers its request would
 * carry (the signatures, `webhook-id`, the endpoint's custom headers), which travel as the broker's message headers.
 */
export type OutgoingMessage = {
  /** The record's id, which `webhook-id` carries too. */
  id: string;
  /** The event type the body names (after the endpoint's event_mapping): what `{type}` is replaced by. */
  type: string;
  body: string;
  headers: Record<string, string>;
};

/** The broker's answer to one publish: what is recorded as the attempt's `response_body`. */
export type Acknowledgement = { answer: string };

/**
 * A publish or a connection that failed, with a reason that names no address or credential, safe to record and show.
 * `permanent`: the broker said the destination cannot take messages (no such exchange or stream, access refused),
 * which disables the endpoint as a 410 does over HTTP; otherwise the attempt is retried on the schedule.
 */
export class BrokerFailure extends Error {
  constructor(message: string, readonly permanent = false) {
    super(message);
  }
}

/** A connection to one broker, kept for many publishes (broker_connections.ts decides when it opens and closes). */
export interface BrokerConnection {
  /**
   * Publishes one message to `destination` and resolves once the broker acknowledged it; rejects with a
   * BrokerFailure otherwise (an unroutable message, a refusal, the connection lost). `signal` aborts the wait (the
   * attempt's timeout, or the worker stopping): the message may still arrive, and is sent again on the next attempt.
   */
  publish(destination: Destination, message: OutgoingMessage, signal: AbortSignal): Promise<Acknowledgement>;
  /** False once the connection failed or was closed: the keeper opens another for the next publish. */
  readonly open: boolean;
  /** Closes it, waiting at most a moment; never throws. */
  close(): Promise<void>;
}

/** How a connection is opened: to one address the URL guard checked, named as the URL names it for TLS. */
export type ConnectOptions = {
  /** The IP address to connect to (checked by the URL guard on this (re)connect). */
  address: string;
  /** Certificate authorities (PEM) trusted instead of the default ones: tests with their own TLS brokers. */
  ca?: string[];
  /** Unique per process and connection: MQTT's client id is built from it. */
  clientId: string;
  /** How long the connection may take to open. */
  timeoutMs: number;
};

/** One broker protocol. */
export interface Transport {
  name: BrokerTransportName;
  /** The URL schemes, without `:`: plaintext (development only, as http) and TLS. */
  schemes: { plain: string; tls: string };
  defaultPort: (secure: boolean) => number;
  /** The destination keys this transport reads; a key of another transport is a 422 naming it. */
  destinationKeys: readonly string[];
  /** Which credentials it takes: a user and password, or (NATS) also a token. */
  credentials: readonly ("userpass" | "token")[];
  /** The path of its URL as `BrokerTarget.path`; adds to `errors` under `url` when it is wrong. */
  parsePath(errors: ErrorBag, pathname: string): string;
  /** Checks a destination's values (required keys, lengths, characters); adds errors under `destination.<key>`. */
  checkDestination(errors: ErrorBag, destination: Record<string, unknown>): void;
  /** The destination as stored: its keys only, defaults filled in. */
  storedDestination(destination: Record<string, unknown>): Destination;
  /** Where a message of `type` goes, for the console and logs: `exchange payments, key pay.identified`. */
  describe(destination: Destination, type?: string): string;
  connect(target: BrokerTarget, credentials: BrokerCredentials, opts: ConnectOptions): Promise<BrokerConnection>;
}

/** `{type}` replaced by the event type, everywhere in a destination's text. */
export function fillType(template: string, type: string): string {
  return template.replaceAll("{type}", type);
}

/** The Node error code (ECONNREFUSED, CERT_HAS_EXPIRED, ...) of an error or of its causes; null without one. */
export function errorCode(error: unknown): string | null {
  for (let e = error, depth = 0; e && typeof e === "object" && depth < 4; e = (e as Error).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && /^[A-Z][A-Z0-9_]{1,63}$/.test(code)) return code;
  }
  return null;
}

/**
 * What a socket or TLS error says to an integrator, the same for every transport: what happened and its code, never
 * where (a library's or Node's message carries the address, "connect ECONNREFUSED 10.0.0.7:5672", or the host name of
 * a certificate that does not match). Null when the error has no code: the transport says it in its own terms.
 */
export function socketFailure(error: unknown, during: "connecting" | "connection lost"): string | null {
  const code = errorCode(error);
  if (!code) return null;
  if (code === "ECONNREFUSED") return "connection refused (ECONNREFUSED)";
  if (code === "ECONNRESET" || code === "EPIPE") {
    return `${during === "connecting" ? "connection reset" : "connection lost"} (${code})`;
  }
  if (code === "ETIMEDOUT") return "connection timed out (ETIMEDOUT)";
  if (/^(EHOSTUNREACH|ENETUNREACH|EADDRNOTAVAIL)$/.test(code)) return `broker unreachable (${code})`;
  if (/CERT|UNABLE_TO|DEPTH_ZERO|SELF_SIGNED|HOSTNAME|ALTNAME|VERIFY|ISSUER|EXPIRED/.test(code)) {
    return `TLS: the broker's certificate was not accepted (${code})`;
  }
  if (/TLS|SSL|OSSL/.test(code)) return `TLS handshake failed (${code})`;
  return `${during === "connecting" ? "connection failed" : "connection lost"} (${code})`;
}
