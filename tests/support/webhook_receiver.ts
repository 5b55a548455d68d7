/**
 * A real webhook receiver on loopback for the tests: records what arrives, answers as told, and checks every body
 * against the event catalogue's JSON Schemas (see `bodyViolation`); `close()` fails the test that owns the receiver
 * when any body did not validate.
 */
import { AssertionError } from "node:assert/strict";
import { createHmac } from "node:crypto";
import { Ajv2020 } from "ajv/dist/2020.js";
import { CATALOGUE, type JsonSchema } from "../../domain/webhooks/outbox/catalogue.ts";
import { VERSIONED_CATALOGUE } from "../../domain/webhooks/outbox/payload_versions.ts";
import { verifySignature } from "../../domain/webhooks/endpoints/signature.ts";

export type Arrival = {
  raw: string;
  // deno-lint-ignore no-explicit-any
  body: any;
  signature: string | null;
  headers: Headers;
  path: string;
  receivedAt: number;
};

export type Receiver = {
  url: string;
  arrivals: Arrival[];
  /** The most requests ever in flight at once at `path` (or at any path). */
  maxInFlight: (path?: string) => number;
  /** Arrivals at one path (each test uses its own path, so tests share one receiver without mixing). */
  at: (path: string) => Arrival[];
  /** One line per body that did not validate against the catalogue: path, reason, the body. */
  violations: string[];
  /** Stops the server, then throws when any body did not validate, so no test passes with an invalid body. */
  close: () => Promise<void>;
};

/**
 * `answer` decides each response (default 200 "ok"); it may wait to keep a delivery in flight. Arrivals are
 * recorded when the request comes in, before the answer. `listen` picks the address (127.0.0.1 and a free port by
 * default) and, with a certificate and its key, serves https.
 */
export function startReceiver(
  answer: (arrival: Arrival, nthAtPath: number) => Response | Promise<Response> = () => new Response("ok"),
  listen: { hostname?: string; port?: number; cert?: string; key?: string } = {},
): Receiver {
  const arrivals: Arrival[] = [];
  const violations: string[] = [];
  const inFlight = new Map<string, number>();
  const maxInFlight = new Map<string, number>();
  const enter = (key: string) => {
    inFlight.set(key, (inFlight.get(key) ?? 0) + 1);
    maxInFlight.set(key, Math.max(maxInFlight.get(key) ?? 0, inFlight.get(key)!));
  };
  const leave = (key: string) => inFlight.set(key, inFlight.get(key)! - 1);
  const { hostname = "127.0.0.1", port: wanted = 0, cert, key } = listen;
  const options = { hostname, port: wanted, onListen: () => {} };
  const server = Deno.serve(cert && key ? { ...options, cert, key } : options, async (req) => {
    const path = new URL(req.url).pathname;
    enter("*");
    enter(path);
    try {
      const raw = await req.text();
      let body: unknown = null;
      try {
        body = JSON.parse(raw);
      } catch { /* keep null */ }
      const arrival: Arrival = {
        raw,
        body,
        signature: req.headers.get("service-signature"),
        headers: req.headers,
        path,
        receivedAt: Date.now(),
      };
      arrivals.push(arrival);
      // a batch (docs/webhooks.md, "Batches") is an array of the bodies it carries: each is checked
      const violation = Array.isArray(body) && req.headers.has("webhook-batch-size")
        ? body.map(bodyViolation).find((v) => v !== null) ?? null
        : bodyViolation(body);
      if (violation) violations.push(`${path}: ${violation}: ${raw}`);
      return await answer(arrival, arrivals.filter((a) => a.path === path).length);
    } finally {
      leave("*");
      leave(path);
    }
  });
  const { port } = server.addr as Deno.NetAddr;
  return {
    url: `${cert ? "https" : "http"}://${hostname}:${port}`,
    arrivals,
    maxInFlight: (path = "*") => maxInFlight.get(path) ?? 0,
    at: (path) => arrivals.filter((a) => a.path === path),
    violations,
    close: async () => {
      await server.shutdown();
      if (violations.length > 0) {
        throw new AssertionError({
          message: `${violations.length} webhook bod(y/ies) did not match the event catalogue:\n${
            violations.join("\n")
          }`,
        });
      }
    },
  };
}

const ajv = new Ajv2020({ strict: true, allErrors: true });
const withoutData = (schema: JsonSchema): JsonSchema => {
  const { data: _, ...properties } = schema.properties as Record<string, JsonSchema>;
  return { ...schema, properties, required: ["id", "type"] };
};
type Validate = ((value: unknown) => boolean) & { errors?: Parameters<typeof ajv.errorsText>[0] };
/** A body valid in any payload version; the errors told are the first version's. */
function inAnyVersion(validators: Validate[]): Validate {
  const validate: Validate = (value) => {
    const ok = validators.some((v) => v(value));
    validate.errors = validators[0].errors;
    return ok;
  };
  return validate;
}
/**
 * Per catalogue type: the snapshot body in any payload version (`secret` allowed; an endpoint's version is not in the
 * body), the thin body, and `data` alone.
 */
const SCHEMAS = new Map(CATALOGUE.map((e, i) => [e.type as string, {
  snapshot: inAnyVersion(VERSIONED_CATALOGUE.map((v) => ajv.compile(v.event_types[i].schema))),
  thin: ajv.compile(withoutData(e.schema)),
  data: ajv.compile((e.schema.properties as Record<string, JsonSchema>).data),
}]));
type Shape = "snapshot" | "thin" | "data";

/**
 * Why a received body does not match the catalogue, or null when it does. Every format the service sends is
 * checked against the matching shape derived from the catalogue's schema of its type:
 * - snapshot `{id, type, data}` (with inject_secret_in_body also `secret`): the catalogue schema itself, or that
 *   of a later payload version (`timestamp`, docs/webhooks.md, Payload versions);
 * - thin `{id, type}` (+ `secret`): that schema without `data`;
 * - wrap_in_notification `{notification: {type, ...data}}` (+ `secret`): the schema of `data` on the fields
 *   beside `type` and `secret`; thin wrapped `{notification: {type, id}}` (+ `secret`): the thin schema.
 * A `type` the catalogue does not know was renamed by event_mapping; the receiver cannot tell from which type, so
 * the rule is: the body must match that shape for at least one catalogue type. Anything else is a violation.
 */
export function bodyViolation(body: unknown): string | null {
  if (!isObject(body)) return "not a JSON object";
  if ("notification" in body) {
    const n = body.notification;
    if (Object.keys(body).length !== 1 || !isObject(n)) return "a wrapped body has only an object `notification`";
    if ("id" in n) return check(n.type, "thin", n);
    const { type, secret, ...data } = n;
    if (secret !== undefined && typeof secret !== "string") return "`secret` is not a string";
    return check(type, "data", data);
  }
  return check(body.type, "data" in body ? "snapshot" : "thin", body);
}

function check(type: unknown, shape: Shape, value: Record<string, unknown>): string | null {
  if (typeof type !== "string") return "no string `type`";
  const known = SCHEMAS.get(type);
  if (known) {
    const validate = known[shape];
    return validate(value) ? null : `${shape} of ${type}: ${ajv.errorsText(validate.errors)}`;
  }
  // Renamed by event_mapping: put a catalogue type back where the schema pins it.
  for (const [original, schemas] of SCHEMAS) {
    if (schemas[shape](shape === "data" ? value : { ...value, type: original })) return null;
  }
  return `${shape} of the renamed type ${type} matches no catalogue type`;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * A uuid that carries a number, for tests that emit events in a sequence: `data.transaction_id` stays valid for
 * the catalogue while the test reads the order back with `seqOf`.
 */
export const seqId = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, "0")}`;
export const seqOf = (id: unknown) => typeof id === "string" ? Number(id.slice(24)) : NaN;

/** The HMAC-SHA256 of `<t>.<body>` in hex, as a v1 (or v0) signature carries it: node:crypto, apart from the module under test. */
export const hmac = (secret: string, t: number, body: string) =>
  createHmac("sha256", secret).update(`${t}.${body}`).digest("hex");

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A body the catalogue accepts, for tests that send through the sender by hand. */
export const EXAMPLE = JSON.stringify(CATALOGUE[0].example);

/**
 * A receiver that checks every delivery's signature with the endpoint's secret (`useSecret` once it is known),
 * answers 400 to a bad one, and counts arrivals per body `id`; each answer takes `answerAfterMs`.
 */
export function countingReceiver(answerAfterMs: number) {
  let secret = "";
  const arrivals = new Map<string, number>();
  const counts = { badSignatures: 0 };
  const receiver = startReceiver(async (arrival) => {
    if (!(await verifySignature(arrival.raw, arrival.signature, secret))) {
      counts.badSignatures++;
      return new Response("bad signature", { status: 400 });
    }
    arrivals.set(arrival.body.id, (arrivals.get(arrival.body.id) ?? 0) + 1);
    await sleep(answerAfterMs);
    return new Response("ok");
  });
  return {
    receiver,
    arrivals,
    counts,
    useSecret: (s: string) => void (secret = s),
  };
}
