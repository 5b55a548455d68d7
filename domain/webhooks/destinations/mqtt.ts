/**
 * The MQTT 5 transport (docs/webhooks.md, "Destinations", MQTT): `mqtt://` and `mqtts://` URLs, a topic template as
 * the destination, and a connection that publishes each delivery at QoS 1, its headers as MQTT 5 user properties,
 * through the mqtt package. Its own file because each broker protocol is one file of transport.ts's shape.
 */

import net from "node:net";
import tls from "node:tls";
import { type IClientOptions, MqttClient, ReasonCodes } from "mqtt";
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

/** The longest topic template an endpoint may store (the event type it takes in stays well under MQTT's 64 KiB). */
export const MAX_TOPIC_CHARS = 255;
/** MQTT strings are at most 65535 bytes of UTF-8. */
const MAX_TOPIC_BYTES = 65535;

/** PUBACK reason codes below 0x80 that still mean the broker took the message. */
const PUBACK_SUCCESS = 0x00;
const PUBACK_NO_MATCHING_SUBSCRIBERS = 0x10;

const hex = (code: number) => `0x${code.toString(16).padStart(2, "0")}`;
const reasonName = (code: number) => (ReasonCodes as Record<number, string>)[code] || "unknown reason";

/** Why a topic (a template, or one filled with the event type) cannot be published to; null when it can. */
function topicProblem(topic: string): string | null {
  if (/[+#]/.test(topic)) return "must not contain the wildcards + or # (a message goes to one topic)";
  if (topic.includes("\0")) return "must not contain the NUL character";
  if (topic.startsWith("$")) return "must not start with $ (such topics, as $SYS, are the broker's own)";
  if (/\p{Cs}/u.test(topic)) return "must be valid text (it has a lone UTF-16 surrogate)";
  if (new TextEncoder().encode(topic).length > MAX_TOPIC_BYTES) {
    return `is too long (maximum is ${MAX_TOPIC_BYTES} bytes)`;
  }
  return null;
}

/** `socketFailure` (transport.ts), with MQTT's words for an error without a code. */
export function socketReason(error: unknown, during: "connecting" | "connection lost"): string {
  return socketFailure(error, during) ?? (during === "connecting" ? "connection failed" : "connection lost");
}

/**
 * What a refused CONNACK means for the endpoint: a refusal of the credentials (0x86 bad user name or password, 0x87
 * not authorized) is permanent; any other (server busy, unavailable, banned for now) is retried.
 */
function connackFailure(code: number): BrokerFailure {
  const at = `(CONNACK ${hex(code)} ${reasonName(code).toLowerCase()})`;
  // Mosquitto answers a wrong password with 0x87 rather than 0x86: both are about the credentials.
  if (code === 0x86 || code === 0x87) {
    return new BrokerFailure(`access refused: the broker rejected the credentials ${at}`, true);
  }
  return new BrokerFailure(`the broker refused the connection ${at}`);
}

/**
 * What a PUBACK of 0x80 or more means: the broker forbids the topic (0x87) or refuses its name (0x90), which no later
 * attempt changes, so permanent; any other (quota exceeded, packet too large, unspecified error) is retried.
 */
function pubackFailure(code: number, topic: string): BrokerFailure {
  const at = `(PUBACK ${hex(code)})`;
  if (code === 0x87) return new BrokerFailure(`not authorized: the broker refused publishing to ${topic} ${at}`, true);
  if (code === 0x90) return new BrokerFailure(`topic name invalid: the broker refused ${topic} ${at}`, true);
  return new BrokerFailure(`the broker refused the message: ${reasonName(code).toLowerCase()} ${at}`);
}

function abortFailure(signal: AbortSignal): BrokerFailure {
  const timedOut = signal.reason instanceof DOMException && signal.reason.name === "TimeoutError";
  return new BrokerFailure(
    timedOut
      ? "timeout: the broker did not acknowledge the message (no PUBACK) in time"
      : "aborted: the attempt stopped before the broker acknowledged the message",
  );
}

/** A code carried by the mqtt package's errors (CONNACK, PUBACK, DISCONNECT reason codes), when it is one. */
const reasonCodeOf = (error: unknown): number | null => {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "number" ? code : null;
};

/** One MQTT client: no reconnect of its own (the keeper of connections reopens), no offline queue. */
class MqttConnection implements BrokerConnection {
  #open = true;
  #lost: BrokerFailure | null = null;
  /** Rejects each publish still waiting, when the connection dies or is closed. */
  readonly #waiting = new Set<(failure: BrokerFailure) => void>();
  /** PUBACK reason codes by packet id, read by the publish callback the same packet then calls. */
  readonly #codes = new Map<number, number>();
  /** Publishes the client still holds (acknowledged or not): a close then drops them rather than waiting. */
  #unanswered = 0;

  constructor(private readonly client: MqttClient, private readonly socketError: () => unknown) {
    client.on("packetreceive", (packet) => {
      if (packet.cmd === "puback" && typeof packet.messageId === "number") {
        this.#codes.set(packet.messageId, packet.reasonCode ?? PUBACK_SUCCESS);
      }
    });
    client.on("disconnect", (packet) => {
      const code = packet.reasonCode ?? 0;
      this.#fail(
        new BrokerFailure(`the broker disconnected: ${reasonName(code).toLowerCase()} (DISCONNECT ${hex(code)})`),
      );
    });
    // A late error (a reset socket, a keepalive timeout) only ends this connection, never the process.
    client.on("error", (error) => this.#fail(this.#lostReason(error)));
    client.on("close", () => this.#fail(this.#lostReason(this.socketError())));
  }

  get open(): boolean {
    return this.#open;
  }

  #lostReason(error: unknown): BrokerFailure {
    const code = reasonCodeOf(error);
    if (code !== null) return new BrokerFailure(`connection lost: ${reasonName(code).toLowerCase()} (${hex(code)})`);
    return new BrokerFailure(socketReason(error, "connection lost"));
  }

  /** Marks the connection dead and rejects what waits on it; `end` drops the client at once (it already failed). */
  #fail(failure: BrokerFailure, end = true) {
    this.#lost ??= failure;
    if (!this.#open) return;
    this.#open = false;
    for (const reject of [...this.#waiting]) reject(this.#lost);
    this.#waiting.clear();
    if (end) this.client.end(true);
  }

  publish(destination: Destination, message: OutgoingMessage, signal: AbortSignal): Promise<Acknowledgement> {
    return new Promise<Acknowledgement>((resolve, reject) => {
      if (signal.aborted) return reject(abortFailure(signal));
      if (!this.#open) return reject(this.#lost ?? new BrokerFailure("connection closed"));
      const topic = fillType(String(destination.topic), message.type);
      const problem = topicProblem(topic);
      if (problem) return reject(new BrokerFailure(`topic name invalid: ${topic} ${problem}`, true));

      let settled = false;
      const settle = (done: () => void) => {
        if (settled) return;
        settled = true;
        signal.removeEventListener("abort", onAbort);
        this.#waiting.delete(onLost);
        done();
      };
      const onAbort = () => settle(() => reject(abortFailure(signal)));
      const onLost = (failure: BrokerFailure) => settle(() => reject(failure));
      signal.addEventListener("abort", onAbort, { once: true });
      this.#waiting.add(onLost);
      this.#unanswered++;
      try {
        this.#send(topic, message, (failure, answer) => settle(() => failure ? reject(failure) : resolve({ answer })));
      } catch (error) {
        this.#unanswered--;
        settle(() => reject(this.#lostReason(error)));
      }
    });
  }

  /** Hands the message to the client; `done` gets the failure, or the PUBACK described for the attempt's record. */
  #send(topic: string, message: OutgoingMessage, done: (failure: BrokerFailure | null, answer: string) => void) {
    this.client.publish(
      topic,
      message.body,
      { qos: 1, properties: { userProperties: message.headers, contentType: "application/json" } },
      (error, packet) => {
        this.#unanswered--;
        const id = packet?.messageId;
        const code = id === undefined ? undefined : this.#codes.get(id);
        if (id !== undefined) this.#codes.delete(id);
        if (error) {
          const refused = reasonCodeOf(error);
          return done(refused !== null ? pubackFailure(refused, topic) : this.#lost ?? this.#lostReason(error), "");
        }
        // 0x10: the broker took the message and routed it to no one; it is the broker's answer, so a success.
        done(
          null,
          code === PUBACK_NO_MATCHING_SUBSCRIBERS
            ? `PUBACK ${hex(code)} no matching subscribers: the broker took the message, no one subscribes to ${topic}`
            : `PUBACK ${hex(code ?? PUBACK_SUCCESS)} success`,
        );
      },
    );
  }

  async close(): Promise<void> {
    const wasOpen = this.#open;
    this.#fail(new BrokerFailure("connection closed"), false);
    if (!wasOpen) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, 1000);
      try {
        // A clean DISCONNECT unless the client still holds publishes, which it would wait for.
        this.client.end(this.#unanswered > 0, {}, () => {
          clearTimeout(timer);
          resolve();
        });
      } catch {
        clearTimeout(timer);
        resolve();
      }
    });
  }
}

async function connect(
  target: BrokerTarget,
  credentials: BrokerCredentials,
  opts: ConnectOptions,
): Promise<BrokerConnection> {
  if (credentials && "token" in credentials) {
    throw new BrokerFailure("access refused: MQTT takes a username and password, not a token", true);
  }
  let socketError: unknown = null;
  const build = () => {
    const socket = target.secure
      ? tls.connect({
        host: opts.address,
        port: target.port,
        // The certificate is checked against the name in the URL; an IP literal has no name to send.
        servername: net.isIP(target.host) ? undefined : target.host,
        ca: opts.ca,
        rejectUnauthorized: true,
      })
      : net.connect({ host: opts.address, port: target.port });
    socket.on("error", (error) => socketError ??= error);
    return socket;
  };
  const options: IClientOptions = {
    protocolVersion: 5,
    clientId: opts.clientId,
    clean: true,
    // The keeper of connections reconnects; mqtt's own reconnect would queue publishes while the broker is away.
    reconnectPeriod: 0,
    queueQoSZero: false,
    resubscribe: false,
    connectTimeout: opts.timeoutMs,
    keepalive: 30,
    ...(credentials ? { username: credentials.username, password: credentials.password } : {}),
  };
  const client = new MqttClient(build, options);

  return await new Promise<BrokerConnection>((resolve, reject) => {
    const done = (outcome: () => void) => {
      clearTimeout(timer);
      client.removeListener("connect", onConnect);
      client.removeListener("error", onError);
      client.removeListener("close", onClose);
      outcome();
    };
    const giveUp = (failure: BrokerFailure) =>
      done(() => {
        // Handlers stay on: a late error from the dropped client must not reach the process.
        client.on("error", () => {});
        client.end(true);
        reject(failure);
      });
    const onConnect = () => done(() => resolve(new MqttConnection(client, () => socketError)));
    const onError = (error: unknown) => {
      const code = reasonCodeOf(error);
      if (code !== null) return giveUp(connackFailure(code));
      if (error instanceof Error && error.message === "connack timeout") {
        return giveUp(new BrokerFailure(`timeout: the broker did not answer within ${opts.timeoutMs} ms`));
      }
      giveUp(new BrokerFailure(socketReason(socketError ?? error, "connecting")));
    };
    const onClose = () => giveUp(new BrokerFailure(socketReason(socketError, "connecting")));
    const timer = setTimeout(
      () => giveUp(new BrokerFailure(`timeout: the broker did not answer within ${opts.timeoutMs} ms`)),
      opts.timeoutMs,
    );
    client.on("connect", onConnect);
    client.on("error", onError);
    client.on("close", onClose);
  });
}

export const mqttTransport: Transport = {
  name: "mqtt",
  schemes: { plain: "mqtt", tls: "mqtts" },
  defaultPort: (secure) => secure ? 8883 : 1883,
  destinationKeys: ["topic"],
  credentials: ["userpass"],

  parsePath(errors: ErrorBag, pathname: string): string {
    if (pathname !== "" && pathname !== "/") {
      errors.add("url", "must have no path for mqtt:// and mqtts:// (the topic is destination.topic)");
    }
    return "";
  },

  checkDestination(errors: ErrorBag, destination: Record<string, unknown>): void {
    const topic = destination.topic;
    if (topic === undefined || topic === null || (typeof topic === "string" && topic.trim() === "")) {
      return errors.add("destination.topic", BLANK);
    }
    if (typeof topic !== "string") return errors.add("destination.topic", "is invalid: must be a string");
    if (topic.length > MAX_TOPIC_CHARS) {
      return errors.add("destination.topic", `is too long (maximum is ${MAX_TOPIC_CHARS} characters)`);
    }
    const problem = topicProblem(topic);
    if (problem) errors.add("destination.topic", problem);
  },

  storedDestination(destination: Record<string, unknown>): Destination {
    return { topic: String(destination.topic) };
  },

  describe(destination: Destination, type?: string): string {
    const topic = String(destination.topic);
    return `topic ${type === undefined ? topic : fillType(topic, type)}`;
  },

  connect,
};
