/**
 * `deno task listen --forward-to <url> [--events a,b] [--url <https://service>] [--token <jwt>] [--cleanup]`: this
 * machine's pull stream followed live and forwarded to a local URL (docs/webhooks.md, "Listening locally"). Each
 * message's exact body is POSTed with its signed headers, so local code verifies it as it would a delivery in
 * production; what the local URL answers 2xx is acknowledged, the rest retried a few times and then skipped (it stays
 * in the stream). The stream is found by the machine's name (made on first run, reused after), followed from the last
 * cursor across network errors and restarts of the service; `--cleanup` deletes it.
 *
 * Without `--url` it talks to the service this checkout runs (`HOST`/`PORT`, as `deno task start` reads them) with a
 * token signed from the local secret, for the development company of `deno task token`; with `--url` it signs in as a
 * user (LISTEN_USERNAME / LISTEN_PASSWORD, signed in again before the token expires) or takes a token as it is
 * (`--token` or LISTEN_TOKEN).
 */

import { pause } from "../domain/basics/abort.ts";
import { signToken } from "../domain/integrators/tokens.ts";
import { developmentCompanyId, loadConfigWithLocalSecrets } from "../domain/infra/local_secrets.ts";
import { printable } from "./delivery_line.ts";
import { serverEvents } from "./event_stream.ts";

const USAGE = `usage: deno task listen --forward-to <url> [--events <type,...>] [--url <https://service>] [--cleanup]
  --forward-to <url>   where each event is POSTed, with its signed headers (e.g. http://127.0.0.1:3000/hooks)
  --events <a,b>       the event types to receive (all by default)
  --url <url>          a remote service (https): signs in with LISTEN_USERNAME and LISTEN_PASSWORD, or takes
                       --token <jwt> / LISTEN_TOKEN; without it, the service this checkout runs (HOST, PORT)
  --cleanup            delete this machine's stream and exit`;

const STREAMS = "/api/v2/notifications/streams";
const SIGN_IN = "/api/v1/sign_in";
/** Tries of a message the local URL refuses, after the first, and the wait before each. */
const RETRIES = 3;
const RETRY_DELAYS_MS = [250, 500, 1000];
const FORWARD_TIMEOUT_MS = 10_000;
/** Reconnection waits: doubled from the first up to the last. */
const RECONNECT_FIRST_MS = 250;
const RECONNECT_MAX_MS = 3_000;
/** The service writes a comment every 15 s: a connection silent this long is dead. */
const IDLE_MS = 45_000;
/** A token is renewed this long before it expires (or at half its life, when that is sooner). */
const RENEW_BEFORE_MS = 5 * 60_000;

/** A reason to stop rather than reconnect: waiting would not change it. */
class Fatal extends Error {}

type Stream = {
  id: string;
  name: string | null;
  kind: string;
  secret: string;
  cursor: string;
  enabled_events: string[];
};
type Message = {
  id: string;
  cursor: string;
  event_id: string;
  type: string;
  body: string;
  headers: Record<string, string>;
};
type Auth = {
  /** A token valid for a few minutes at least. */
  bearer: () => Promise<string>;
  /** After a 401: a new token if this one can be renewed (true), false if not. */
  renew: () => Promise<boolean>;
};

/** How long after the first Ctrl-C another counts as a second press (see the listener below). */
const SECOND_PRESS_MS = 1_000;
const args = parseArgs(Deno.args);
const { service, auth } = args.url ? remote(args.url) : await local();
const name = Deno.hostname();
const stop = new AbortController();
/** The live connection open now, aborted on Ctrl-C or when it goes silent. */
let live: AbortController | null = null;
/**
 * When the first Ctrl-C came. One press can arrive twice: a terminal sends SIGINT to the whole foreground group, and
 * `deno task` passes its own on to the command as well; only a second press (a second later or more) means "at once".
 */
let interruptedAt: number | null = null;
Deno.addSignalListener("SIGINT", () => {
  if (interruptedAt !== null) {
    if (Date.now() - interruptedAt >= SECOND_PRESS_MS) Deno.exit(130); // a second Ctrl-C: at once
    return;
  }
  interruptedAt = Date.now();
  stop.abort();
  live?.abort();
});

if (args.cleanup) {
  await cleanup().catch((err) => fail(err instanceof Error ? err.message : String(err)));
  Deno.exit(0);
}

const stream = await untilReachable(ownStream);
if (!stream) Deno.exit(0); // Ctrl-C while waiting
say(`stream ${stream.id} (${printable(name)}) of ${service}: ${stream.enabled_events.join(", ")}`);
say(`forwarding to ${args.forwardTo}; Ctrl-C stops, --cleanup deletes the stream`);
say(`secret ${stream.secret}`);
say(`verify with new Webhook(secret, { format: "raw" }) of the standardwebhooks package (npm)`);

/** After the last message forwarded or skipped: where a reconnection resumes (Last-Event-ID). */
let position = stream.cursor;
/** The last cursor the local URL took (2xx) whose acknowledgement has not reached the service yet. */
let pendingAck: string | null = null;
await follow();
await flushAck();
say("stopped; the next run starts after the last event the local URL took");
Deno.exit(0);

/** Follows the stream until Ctrl-C: reconnects with the last cursor after an error, a close, or a restart. */
async function follow() {
  let failures = 0;
  let waitingSaid = false;
  while (!stop.signal.aborted) {
    let reason: string;
    try {
      reason = await followOnce(() => {
        if (waitingSaid) say("reconnected");
        failures = 0;
        waitingSaid = false;
      });
    } catch (err) {
      if (err instanceof Fatal) fail(err.message);
      reason = err instanceof Error ? err.message : String(err);
    }
    if (stop.signal.aborted) return;
    const delay = Math.min(RECONNECT_FIRST_MS * 2 ** failures++, RECONNECT_MAX_MS);
    if (!waitingSaid) {
      say(`${reason}: reconnecting from cursor ${position} (retrying every ${RECONNECT_MAX_MS / 1000} s at most)`);
    }
    waitingSaid = true;
    await pause(delay, stop.signal);
  }
}

/** One live connection, read to its end; the reason it ended. */
async function followOnce(connected: () => void): Promise<string> {
  const ctl = new AbortController();
  live = ctl;
  if (stop.signal.aborted) ctl.abort();
  const res = await fetch(`${service}${STREAMS}/${stream!.id}/live`, {
    headers: { authorization: `Bearer ${await auth.bearer()}`, accept: "text/event-stream", "last-event-id": position },
    signal: ctl.signal,
  });
  if (res.status === 401) {
    await res.body?.cancel();
    if (await auth.renew()) return "the token was refused, a new one taken";
    throw new Fatal("the service refused the token (401): give a new one (--token, LISTEN_TOKEN)");
  }
  if (res.status === 404) {
    await res.body?.cancel();
    throw new Fatal(`stream ${stream!.id} is gone (deleted, perhaps by --cleanup): run again to make a new one`);
  }
  if (res.status === 410) {
    const oldest = (await res.json().catch(() => null))?.errors?.oldest_cursor;
    if (typeof oldest !== "string") throw new Error("live answered 410 without oldest_cursor");
    say(`the messages after cursor ${position} are gone (backlog cap or retention): reading on from ${oldest}`);
    position = oldest;
    return "cursor gone";
  }
  if (!res.ok || !res.body) {
    await res.body?.cancel();
    return `live answered ${res.status}`;
  }
  connected();
  await flushAck();
  let lastSeen = Date.now();
  let busy = false;
  const watchdog = setInterval(() => {
    if (!busy && Date.now() - lastSeen > IDLE_MS) ctl.abort();
  }, 1_000);
  try {
    for await (const event of serverEvents(res.body, () => lastSeen = Date.now())) {
      if (event.event === "message") {
        busy = true;
        const message = JSON.parse(event.data) as Message;
        await forward(message);
        if (stop.signal.aborted) return "stopped";
        position = message.cursor;
        busy = false;
        lastSeen = Date.now();
      } else if (event.event === "closed") {
        // the instance stops: its last cursor is past every message it sent, each handled by now
        const cursor = JSON.parse(event.data)?.cursor;
        if (typeof cursor === "string" && cursor) position = cursor;
        return "the service closed the stream (it is stopping)";
      }
    }
    return "the live connection ended";
  } catch (err) {
    if (ctl.signal.aborted && !stop.signal.aborted) return `no data for ${IDLE_MS / 1000} s`;
    throw err;
  } finally {
    clearInterval(watchdog);
    live = null;
  }
}

/**
 * POSTs one message to the local URL: acknowledged when it answers 2xx; otherwise retried, then skipped with a line
 * that says how to read it again (the message stays in the stream, before the next acknowledged cursor).
 */
async function forward(message: Message) {
  const before = position;
  for (let attempt = 1;; attempt++) {
    const started = performance.now();
    let outcome: string;
    let ok = false;
    try {
      const res = await fetch(args.forwardTo, {
        method: "POST",
        headers: { ...message.headers, "content-type": "application/json" },
        body: message.body,
        signal: AbortSignal.any([AbortSignal.timeout(FORWARD_TIMEOUT_MS), stop.signal]),
      });
      await res.body?.cancel();
      ok = res.ok;
      outcome = String(res.status);
    } catch (err) {
      if (stop.signal.aborted) return;
      outcome = `failed (${err instanceof Error ? err.message : String(err)})`;
    }
    const line = `${stamp()} ${printable(message.type)} ${printable(message.event_id)} -> ${outcome} in ${
      Math.round(performance.now() - started)
    } ms`;
    if (ok) {
      console.log(line);
      pendingAck = message.cursor;
      await flushAck();
      return;
    }
    if (attempt <= RETRIES) {
      const delay = RETRY_DELAYS_MS[attempt - 1];
      console.log(`${line}; retry ${attempt} of ${RETRIES} in ${delay} ms`);
      await pause(delay, stop.signal);
      if (stop.signal.aborted) return;
      continue;
    }
    console.log(
      `${line}; skipped after ${attempt} tries, not acknowledged; still in the stream: ` +
        `GET ${STREAMS}/${stream!.id}/messages?after=${encodeURIComponent(before)}&limit=1`,
    );
    return;
  }
}

/** Acknowledges the last cursor the local URL took; kept for the next try when the service cannot be reached. */
async function flushAck() {
  const cursor = pendingAck;
  if (!cursor) return;
  try {
    const res = await api("POST", `${STREAMS}/${stream!.id}/ack`, { cursor });
    if (pendingAck === cursor) pendingAck = null;
    if (res.status !== 200) say(`acknowledging cursor ${cursor} answered ${res.status}: ${JSON.stringify(res.body)}`);
  } catch (err) {
    if (err instanceof Fatal) throw err;
    // the service is away: the reconnection acknowledges it
  }
}

/** This machine's stream, made if it has none, with the event types asked for. */
async function ownStream(): Promise<Stream> {
  const wanted = args.events ?? ["*"];
  const res = await api("POST", `${STREAMS}/listen`, { name, enabled_events: wanted });
  if (res.status >= 500 || res.status === 429) throw new Error(`POST ${STREAMS}/listen answered ${res.status}`);
  if (res.status !== 200 && res.status !== 201) {
    throw new Fatal(`POST ${STREAMS}/listen answered ${res.status}: ${JSON.stringify(res.body)}`);
  }
  const found = res.body.data as Stream;
  const same = [...found.enabled_events].sort().join() === [...new Set(wanted)].sort().join();
  if (res.status === 201 || same) return found;
  // the stream is reused: it gets the types of this run
  const put = await api("PUT", `${STREAMS}/${found.id}`, { enabled_events: wanted });
  if (put.status !== 200) {
    throw new Fatal(`PUT ${STREAMS}/${found.id} answered ${put.status}: ${JSON.stringify(put.body)}`);
  }
  return put.body.data as Stream;
}

async function cleanup() {
  const res = await api("GET", STREAMS);
  if (res.status !== 200) throw new Error(`GET ${STREAMS} answered ${res.status}: ${JSON.stringify(res.body)}`);
  const mine = (res.body.data as Stream[]).filter((s) => s.kind === "listen" && s.name === name);
  if (!mine.length) return say(`no stream of ${printable(name)} at ${service}: nothing to delete`);
  for (const s of mine) {
    const gone = await api("DELETE", `${STREAMS}/${s.id}`);
    if (gone.status !== 204 && gone.status !== 404) throw new Error(`DELETE answered ${gone.status}`);
    say(`deleted stream ${s.id} (${printable(name)})`);
  }
}

/** `step` once the service answers: anything but a `Fatal` is waited out, with one line said. */
async function untilReachable<T>(step: () => Promise<T>): Promise<T | null> {
  for (let failures = 0; !stop.signal.aborted; failures++) {
    try {
      return await step();
    } catch (err) {
      if (err instanceof Fatal) fail(err.message);
      // not listening yet, starting, or busy: each is waited out alike
      const why = err instanceof TypeError ? "" : `: ${err instanceof Error ? err.message : String(err)}`;
      if (failures === 0) say(`waiting for the service at ${service}${args.url ? "" : " (deno task start)"}${why}`);
      await pause(Math.min(RECONNECT_FIRST_MS * 2 ** failures, RECONNECT_MAX_MS), stop.signal);
    }
  }
  return null;
}

/** A call to the service with a current token; one 401 renews it (when it can be) and tries again. */
// deno-lint-ignore no-explicit-any -- the service's JSON, read field by field where it is used
async function api(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  for (let tries = 0;; tries++) {
    const res = await fetch(`${service}${path}`, {
      method,
      headers: { authorization: `Bearer ${await auth.bearer()}`, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (res.status === 401) {
      if (tries === 0 && await auth.renew()) continue;
      throw new Fatal(`${method} ${path}: the service refused the token (401): ${text}`);
    }
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch { /* kept as text */ }
    return { status: res.status, body: parsed };
  }
}

/** The service this checkout runs, with tokens signed for the development company. */
async function local(): Promise<{ service: string; auth: Auth }> {
  const config = await loadConfigWithLocalSecrets().catch((err) =>
    fail(err instanceof Error ? err.message : String(err))
  );
  if (config.appEnv === "production") {
    fail("APP_ENV=production has no development company: give the service's --url and sign in as a user");
  }
  const companyId = await developmentCompanyId();
  let token = "";
  let renewAt = 0;
  const sign = async () => {
    token = await signToken(config, companyId);
    renewAt = Date.now() + config.jwtMaxTtlSeconds * 1000 / 2;
  };
  return {
    service: `http://${loopbackOf(config.host)}:${config.port}`,
    auth: {
      bearer: async () => {
        if (Date.now() >= renewAt) await sign();
        return token;
      },
      renew: async () => (await sign(), true),
    },
  };
}

/** A remote service: a user's sign-in, renewed before its token expires, or a token given as it is. */
function remote(service: string): { service: string; auth: Auth } {
  const given = args.token ?? Deno.env.get("LISTEN_TOKEN");
  if (given) {
    const expires = expiryOf(given);
    if (expires) say(`the token given expires at ${stamp(expires)}; it is not renewed (sign in to have it renewed)`);
    return { service, auth: { bearer: () => Promise.resolve(given), renew: () => Promise.resolve(false) } };
  }
  const username = Deno.env.get("LISTEN_USERNAME");
  const password = Deno.env.get("LISTEN_PASSWORD");
  if (!username || !password) {
    fail(`--url needs LISTEN_USERNAME and LISTEN_PASSWORD (a user's sign-in), or --token / LISTEN_TOKEN\n${USAGE}`);
  }
  let token = "";
  let renewAt = 0;
  const signIn = async () => {
    const res = await fetch(`${service}${SIGN_IN}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ user: { username, password } }),
    });
    const text = await res.text();
    if (res.status === 401 || res.status === 422) throw new Fatal(`sign-in as ${username} refused: ${text}`);
    if (!res.ok) throw new Error(`sign-in answered ${res.status}: ${text}`);
    const jwt = JSON.parse(text).jwt as string;
    // the sign-in answer holds the token; its expiry is the token's exp claim (24 hours from now)
    const now = Date.now();
    const expires = expiryOf(jwt) ?? now + 24 * 3600_000;
    const renewed = token !== "";
    token = jwt;
    renewAt = expires - Math.min(RENEW_BEFORE_MS, (expires - now) / 2);
    say(
      `${renewed ? "signed in again" : "signed in"} as ${printable(username)}: the token expires at ${
        stamp(expires)
      }, ` +
        `renewed at ${stamp(renewAt)}`,
    );
  };
  return {
    service,
    auth: {
      bearer: async () => {
        if (Date.now() >= renewAt) await signIn();
        return token;
      },
      renew: async () => (await signIn(), true),
    },
  };
}

/** The `exp` claim of a JWT, in milliseconds; null when it has none. */
function expiryOf(jwt: string): number | null {
  try {
    const payload = jwt.split(".")[1].replaceAll("-", "+").replaceAll("_", "/");
    const exp = JSON.parse(atob(payload.padEnd(Math.ceil(payload.length / 4) * 4, "="))).exp;
    return typeof exp === "number" ? exp * 1000 : null;
  } catch {
    return null;
  }
}

type Args = { forwardTo: string; events?: string[]; url?: string; token?: string; cleanup: boolean };

function parseArgs(argv: string[]): Args {
  const out: Partial<Args> & { cleanup: boolean } = { cleanup: false };
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i].startsWith("--") && argv[i].includes("=")
      ? [argv[i].slice(0, argv[i].indexOf("=")), argv[i].slice(argv[i].indexOf("=") + 1)]
      : [argv[i], undefined];
    const value = () => {
      const v = inline ?? argv[++i];
      if (v === undefined || v === "") fail(`${flag} needs a value\n${USAGE}`);
      return v;
    };
    if (flag === "--help" || flag === "-h") fail(USAGE);
    else if (flag === "--cleanup") out.cleanup = true;
    else if (flag === "--forward-to") out.forwardTo = httpUrl(value(), flag);
    else if (flag === "--url") out.url = serviceUrl(value());
    else if (flag === "--token") out.token = value();
    else if (flag === "--events") {
      out.events = value().split(",").map((t) => t.trim()).filter(Boolean);
      if (!out.events.length) fail(`--events needs at least one event type\n${USAGE}`);
    } else fail(`unexpected argument ${JSON.stringify(argv[i])}\n${USAGE}`);
  }
  if (!out.cleanup && !out.forwardTo) fail(`--forward-to is required\n${USAGE}`);
  return out as Args;
}

function httpUrl(value: string, flag: string): string {
  const url = URL.parse(value);
  if (!url || (url.protocol !== "http:" && url.protocol !== "https:")) {
    fail(`${flag} must be an http(s) URL, got ${JSON.stringify(value)}\n${USAGE}`);
  }
  return url.href;
}

/** HTTPS, the token crosses the network; plain HTTP only to this machine (a local service signed in to as a user). */
function serviceUrl(value: string): string {
  const url = new URL(httpUrl(value, "--url"));
  const loopback = ["127.0.0.1", "localhost", "[::1]"].includes(url.hostname);
  if (url.protocol !== "https:" && !loopback) fail(`--url must be https (the token crosses the network)\n${USAGE}`);
  return url.origin;
}

/** The address that reaches the service from this machine when it listens on every interface. */
function loopbackOf(host: string): string {
  if (host === "0.0.0.0" || host === "") return "127.0.0.1";
  if (host === "::" || host === "[::]") return "[::1]";
  return host.includes(":") && !host.startsWith("[") ? `[${host}]` : host;
}

/** UTC to the second: `2026-12-07T20:01:02Z`. */
function stamp(at = Date.now()): string {
  return new Date(at).toISOString().replace(/\.\d{3}Z$/, "Z");
}

function say(message: string) {
  console.log(`listen: ${message}`);
}

function fail(message: string): never {
  console.error(`listen: ${printable(message).replaceAll("\\x0a", "\n")}`);
  Deno.exit(1);
}
