/**
 * The broker transports by name and URL scheme, and the rules every destination and broker credential obeys whatever
 * its transport (docs/webhooks.md, "Destinations"): a key of another transport is refused, not ignored, since it
 * means the integrator meant another broker. Each transport's own rules are in its file.
 */

import { BLANK, type ErrorBag } from "../../basics/errors.ts";
import {
  BROKER_TRANSPORTS,
  type BrokerCredentials,
  type BrokerTransportName,
  type Transport,
  type TransportName,
} from "./transport.ts";
import { redisTransport } from "./redis.ts";
import { amqpTransport } from "./amqp.ts";
import { mqttTransport } from "./mqtt.ts";
import { natsTransport } from "./nats.ts";

/** Every broker transport this release delivers to. */
export const TRANSPORTS: Partial<Record<BrokerTransportName, Transport>> = {
  amqp: amqpTransport,
  nats: natsTransport,
  redis: redisTransport,
  mqtt: mqttTransport,
};

/** The transport a URL scheme (`amqps:`, with or without the colon) names; null for http(s) and unknown schemes. */
export function transportForScheme(protocol: string): Transport | null {
  const scheme = protocol.replace(/:$/, "").toLowerCase();
  for (const name of BROKER_TRANSPORTS) {
    const t = TRANSPORTS[name];
    if (t && (t.schemes.plain === scheme || t.schemes.tls === scheme)) return t;
  }
  return null;
}

/** Which transport a URL names: `http` for http(s), a broker's name, or null when the scheme is none of them. */
export function transportOfUrl(raw: string): TransportName | null {
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(raw)?.[1]?.toLowerCase();
  if (!scheme) return null;
  if (scheme === "http" || scheme === "https") return "http";
  return transportForScheme(scheme)?.name ?? null;
}

/** The schemes an endpoint URL may have, for messages: `https://, amqps://, tls://, rediss://, mqtts://`. */
export function acceptedSchemes(allowPlain: boolean): string[] {
  const brokers = BROKER_TRANSPORTS.flatMap((n) => {
    const t = TRANSPORTS[n];
    return t ? (allowPlain ? [t.schemes.plain, t.schemes.tls] : [t.schemes.tls]) : [];
  });
  return [...(allowPlain ? ["http", "https"] : ["https"]), ...brokers].map((s) => `${s}://`);
}

/**
 * A destination's rules: an object, no key of another transport (422 naming it), then the transport's own checks.
 * Keys no transport reads are ignored, as unknown fields of every body are (docs/errors.md).
 */
export function checkDestination(errors: ErrorBag, transport: Transport, destination: unknown): void {
  if (destination === null || destination === undefined) return errors.add("destination", BLANK);
  if (typeof destination !== "object" || Array.isArray(destination)) {
    return errors.add("destination", "must be an object");
  }
  const given = destination as Record<string, unknown>;
  let foreign = false;
  for (const name of BROKER_TRANSPORTS) {
    const other = TRANSPORTS[name];
    if (!other || other === transport) continue;
    for (const key of other.destinationKeys) {
      if (key in given && !transport.destinationKeys.includes(key)) {
        foreign = true;
        errors.add(
          ["destination", key],
          `is a key of ${other.name} destinations (${other.schemes.tls}://); ${transport.name} destinations ` +
            `take ${transport.destinationKeys.join(", ")}`,
        );
      }
    }
  }
  if (!foreign) transport.checkDestination(errors, given);
}

/** The longest user name, password or token accepted. */
export const MAX_CREDENTIAL_CHARS = 1024;

/**
 * Broker credentials' shape: `{username, password}` or, where the transport takes one, `{token}`; each a non-empty
 * string of at most MAX_CREDENTIAL_CHARS. `masked` is the value a stored one is shown as, which keeps it.
 */
export function checkBrokerCredentials(errors: ErrorBag, transport: Transport, credentials: unknown): void {
  if (credentials === null || credentials === undefined) return;
  if (typeof credentials !== "object" || Array.isArray(credentials)) {
    return errors.add("broker_credentials", "must be an object: {username, password} or {token}");
  }
  const given = credentials as Record<string, unknown>;
  const text = (key: string) => {
    const value = given[key];
    if (value === undefined || value === null || value === "") return errors.add(["broker_credentials", key], BLANK);
    if (typeof value !== "string") return errors.add(["broker_credentials", key], "must be a string");
    if (value.length > MAX_CREDENTIAL_CHARS) {
      errors.add(["broker_credentials", key], `must be at most ${MAX_CREDENTIAL_CHARS} characters`);
    }
  };
  if ("token" in given) {
    if (!transport.credentials.includes("token")) {
      return errors.add(
        "broker_credentials.token",
        `is not taken by ${transport.name}: give {username, password}`,
      );
    }
    return text("token");
  }
  text("username");
  text("password");
}

/** The credentials as they are opened and used: only the keys of their kind. */
export function brokerCredentialsOf(given: Record<string, unknown>): BrokerCredentials {
  if (typeof given.token === "string") return { token: given.token };
  return { username: String(given.username), password: String(given.password) };
}
