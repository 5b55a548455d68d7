/**
 * `deno task receive [--port 4001]`: a webhook receiver for development (README, "Quickstart"). It listens on
 * loopback, waits for the service this checkout runs (`HOST`/`PORT`, as `deno task start` reads them), makes sure the
 * development company (the one of `deno task token`) has an active endpoint at its own URL, and then prints every
 * delivery and verifies it with the `standardwebhooks` package and that endpoint's secret (or the secret of whichever
 * endpoint of the company the delivery came from, asked of the service: another endpoint may point here too). Each
 * verified delivery's line ends with the endpoint it came from (`endpoint <id>`), after the fields the README's
 * quickstart and its test read.
 *
 * It registers its endpoint itself rather than take a secret as an argument: it already holds what a token needs,
 * so the quickstart has no step that copies a secret from one answer into the next command. Running it again
 * reuses the endpoint at the same URL (enabling it when it was disabled) instead of adding one; `localhost` and
 * `[::1]` for `127.0.0.1` are the same URL to the service (docs/webhooks.md, "One endpoint per URL"), and so here.
 */

import { Webhook } from "standardwebhooks";
import { signToken } from "../domain/integrators/tokens.ts";
import { developmentCompanyId, loadConfigWithLocalSecrets } from "../domain/infra/local_secrets.ts";
import { deliveryLine, printable } from "./delivery_line.ts";
import { loopbackForm } from "../domain/webhooks/endpoints/url_guard.ts";

const USAGE = "usage: deno task receive [--port <port>]   (default 4001)";
const port = parsePort(Deno.args);
const config = await loadConfigWithLocalSecrets().catch((err) =>
  fail(err instanceof Error ? err.message : String(err))
);
if (config.appEnv === "production") fail("deno task receive is a development tool: APP_ENV=production refuses it");

const service = `http://${loopbackOf(config.host)}:${config.port}`;
const hookUrl = `http://127.0.0.1:${port}/hooks`;
const companyId = await developmentCompanyId();
const token = await signToken(config, companyId);
const ENDPOINTS = `${service}/api/v2/notifications/endpoints`;

type Endpoint = { id: string; url: string; status: "active" | "disabled"; secret: string };
let endpoint: Endpoint | null = null;
/** The secrets of the company's endpoints seen so far, by endpoint id: another endpoint may point here too. */
const secrets = new Map<string, string>();

try {
  Deno.serve({ hostname: "127.0.0.1", port, onListen: () => {} }, receive);
} catch (err) {
  if (err instanceof Deno.errors.AddrInUse) fail(`port ${port} on 127.0.0.1 is already in use: pass --port <another>`);
  throw err;
}
await waitForService();
endpoint = await subscribe().catch((err) => fail(err.message));
secrets.set(endpoint.id, endpoint.secret);
say(
  `endpoint ${endpoint.id} of company ${companyId} delivers to ${endpoint.url}; each delivery is printed and verified`,
);

async function receive(req: Request): Promise<Response> {
  // GET answers once the endpoint exists, so a script can wait for the receiver (README, "Quickstart")
  if (req.method !== "POST") {
    return endpoint
      ? new Response(`receiving at ${hookUrl} for endpoint ${endpoint.id}\n`)
      : new Response(null, { status: 503 }); // empty: a waiting curl prints nothing per try
  }
  const raw = await req.text(); // the exact bytes that were signed
  const headers = Object.fromEntries(req.headers);
  const from = await verifiedBy(raw, headers);
  // whoever reaches this port writes the body and headers: printed with their control characters escaped
  console.log(deliveryLine(from !== null, raw, headers, from ?? undefined));
  if (from === null) return new Response("signature does not verify\n", { status: 400 });
  return new Response(null, { status: 204 });
}

/**
 * The endpoint whose secret verifies the delivery, or null: the secrets known so far first, then (a rotated secret, or
 * another endpoint of the company pointing here) the one of the endpoint the service says the record belongs to.
 */
async function verifiedBy(raw: string, headers: Record<string, string>): Promise<string | null> {
  for (const [id, secret] of secrets) if (verify(raw, headers, secret)) return id;
  const asked = await secretOf(headers["webhook-id"]);
  return asked && verify(raw, headers, asked.secret) ? asked.endpointId : null;
}

function verify(raw: string, headers: Record<string, string>, secret: string): boolean {
  try {
    // the service keys the HMAC with the secret's text (docs/webhooks.md, "Standard Webhooks"): format "raw"
    new Webhook(secret, { format: "raw" }).verify(raw, headers);
    return true;
  } catch {
    return false;
  }
}

async function waitForService() {
  for (let said = false;; await sleep(500)) {
    try {
      const res = await fetch(`${service}/healthz`);
      await res.body?.cancel();
      if (res.ok) return;
    } catch { /* not listening yet */ }
    if (!said) say(`waiting for the service at ${service} (deno task start)`);
    said = true;
  }
}

/**
 * The development company's endpoint at `hookUrl`: the one already there (enabled again if need be), or a new one.
 * One at `hookUrl` under another loopback name counts (the service would refuse a second): an active one first, then
 * the exact URL.
 */
async function subscribe(): Promise<Endpoint> {
  const list = await call<Endpoint[]>("GET", ENDPOINTS);
  const here = loopbackForm(hookUrl);
  const rank = (e: Endpoint) => (e.status === "active" ? 0 : 2) + (e.url === hookUrl ? 0 : 1);
  const [mine] = list.filter((e) => e.url === hookUrl || loopbackForm(e.url) === here).sort((a, b) =>
    rank(a) - rank(b)
  );
  if (!mine) return await call<Endpoint>("POST", ENDPOINTS, { body: { url: hookUrl } });
  if (mine.status === "disabled") await call("POST", `${ENDPOINTS}/${mine.id}/enable`);
  return mine;
}

/** The endpoint a delivery record (`webhook-id`) belongs to, and its current secret; null when there is none. */
function secretOf(recordId: string | undefined): Promise<{ endpointId: string; secret: string } | null> {
  return askSecretOf(recordId).catch((err) => {
    say(err.message);
    return null;
  });
}

async function askSecretOf(recordId: string | undefined): Promise<{ endpointId: string; secret: string } | null> {
  if (!recordId || !/^[0-9a-f-]{36}$/.test(recordId)) return null;
  const record = await call<{ endpoint_id: string } | null>(
    "GET",
    `${service}/api/v2/notifications/events/${recordId}`,
    {
      allowMissing: true,
    },
  );
  if (!record) return null;
  const { secret } = await call<Endpoint>("GET", `${ENDPOINTS}/${record.endpoint_id}`);
  secrets.set(record.endpoint_id, secret);
  return { endpointId: record.endpoint_id, secret };
}

async function call<T>(method: string, url: string, opts: { body?: unknown; allowMissing?: boolean } = {}): Promise<T> {
  const res = await fetch(url, {
    method,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
  });
  const text = await res.text();
  if (res.status === 404 && opts.allowMissing) return null as T;
  // a refusal is told as the service said it: it names the setting that would change it
  if (!res.ok) throw new Error(`${method} ${url} answered ${res.status}: ${text}`);
  return JSON.parse(text).data;
}

function parsePort(args: string[]): number {
  if (args.length === 0) return 4001;
  const value = args.length === 2 && args[0] === "--port" ? Number(args[1]) : NaN;
  if (!Number.isInteger(value) || value < 1 || value > 65535) fail(USAGE);
  return value;
}

/** The address that reaches the service from this machine when it listens on every interface. */
function loopbackOf(host: string): string {
  if (host === "0.0.0.0" || host === "") return "127.0.0.1";
  if (host === "::" || host === "[::]") return "[::1]";
  return host.includes(":") && !host.startsWith("[") ? `[${host}]` : host;
}

function say(message: string) {
  console.log(`receiver: ${printable(message)}`);
}

function sleep(ms: number) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function fail(message: string): never {
  console.error(`receiver: ${printable(message)}`);
  Deno.exit(1);
}
