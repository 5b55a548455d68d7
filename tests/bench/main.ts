/**
 * `deno task bench`: HTTP figures for the person endpoints against /healthz as the ceiling, then the webhook
 * delivery figures. Each figure prints as `name value`, then what it means and, where the project set one, its
 * target and whether this run met it (tests/bench/figures.ts). Measures only: a missed target does not fail it.
 */
import { signToken } from "../../domain/integrators/tokens.ts";
import { loadConfig } from "../../domain/infra/config.ts";
import { load, type LoadResult } from "./http.ts";
import { describe, type Figures, round, summary } from "./figures.ts";
import { dropDatabase, freshDatabase } from "../support/helpers.ts";
import { cpf } from "../support/check_digits.ts";
import { BENCH_JWT_SECRET as JWT_SECRET, startService } from "./service.ts";
import { eventToReceipt, payinsAcrossSubjects } from "./money_path.ts";
import { type CpuPerRequest, cpuPerRequest } from "./cpu.ts";

const SECONDS = Number(Deno.env.get("BENCH_SECONDS") ?? 10);
const CONNECTIONS = 32;
/** How long pay-ins arrive at each fixed rate in the event-to-receipt phases. */
const RECEIPT_SECONDS = Number(Deno.env.get("BENCH_RECEIPT_SECONDS") ?? 5);

function row(name: string, r: LoadResult) {
  return `${name.padEnd(22)} ${r.requestsPerSecond.toFixed(0).padStart(8)} req/s   p50 ${
    r.p50Ms.toFixed(2).padStart(6)
  } ms   p99 ${r.p99Ms.toFixed(2).padStart(6)} ms   errors ${r.errors}`;
}

/**
 * The per-company rate limit for the "limited" phase: a rate that never binds, so what it measures is the price of
 * counting (a trip to the shared bucket per batch of burst/50 tokens, 40 here), not the 429s. BENCH_RATE_LIMIT
 * (`rate:burst`) changes it.
 */
const [LIMITED_RATE, LIMITED_BURST] = (Deno.env.get("BENCH_RATE_LIMIT") ?? "100000:2000").split(":");

let cpfs = 0;
/** A new valid CPF each call, for the fallback load generator (wrk makes its own). */
const nextCpf = () => cpf(String(100_000_000 + (cpfs++ % 800_000_000)));

/** POST person with a new CPF, as the fallback load generator sends it. */
const newPersonRequest = (base: string, auth: Record<string, string>) => () =>
  new Request(`${base}/api/v1/subject/people`, {
    method: "POST",
    headers: { ...auth, "content-type": "application/json" },
    body: JSON.stringify({
      person: { document_number: nextCpf(), document_type: "cpf", social_name: "Bench", fiscal_country: "BRA" },
    }),
  });

/** A service on a database of its own, with a company's token and one person to read back. */
async function benchService(name: string, env: Record<string, string> = {}) {
  const url = await freshDatabase(name);
  const { child, base } = await startService(url, env);
  const token = await signToken(loadConfig({ JWT_SECRET }), crypto.randomUUID());
  const auth = { authorization: `Bearer ${token}` };
  const created = await fetch(`${base}/api/v1/subject/people`, {
    method: "POST",
    headers: { ...auth, "content-type": "application/json" },
    body: JSON.stringify({
      person: { document_number: "52998224725", document_type: "cpf", social_name: "Bench", fiscal_country: "BRA" },
    }),
  }).then((r) => r.json());
  const personId: string = created.data.id;
  const wrkEnv = { TOKEN: token, PERSON_ID: personId };
  const wrkDir = new URL("./wrk/", import.meta.url).pathname;
  const phase = (script: string, request: () => Request) =>
    load({ url: base, connections: CONNECTIONS, seconds: SECONDS, script: `${wrkDir}${script}`, env: wrkEnv, request });
  return {
    base,
    auth,
    wrkDir,
    pid: child.pid,
    post: () => phase("post_person.lua", newPersonRequest(base, auth)),
    get: () =>
      phase("get_person.lua", () => new Request(`${base}/api/v1/subject/people/${personId}`, { headers: auth })),
    stop: async () => {
      child.kill("SIGTERM");
      await child.status;
      await dropDatabase(url);
    },
  };
}

/**
 * /healthz, POST person and GET person; then the same two on a service with the per-company rate limit on (its
 * buckets shared in Postgres), each right after its unlimited twin so a pause of the machine falls on both: what the
 * shared counters cost a request, as a share of the same run's figures.
 */
async function benchHttp(): Promise<Figures> {
  // pay-ins unthrottled and a receiver on loopback for the money-path phases (tests/bench/money_path.ts)
  const open = await benchService("bench_http", {
    SANDBOX_RATE_LIMIT_PER_SECOND: "0",
    WEBHOOK_ALLOW_PRIVATE_URLS: "true",
  });
  const limited = await benchService("bench_http_limited", {
    RATE_LIMIT_PER_SECOND: LIMITED_RATE,
    RATE_LIMIT_BURST: LIMITED_BURST,
  });
  try {
    // each phase of the open service with the CPU it cost the service and Postgres per request (tests/bench/cpu.ts)
    const cpu: Record<string, CpuPerRequest> = {};
    const measured = async (name: string, phase: () => Promise<LoadResult>) => {
      const { result, cpu: spent } = await cpuPerRequest(open.pid, phase, (r) => r.requestsPerSecond * SECONDS);
      cpu[name] = spent;
      return result;
    };
    const health = await measured("healthz", () =>
      load({
        url: `${open.base}/healthz`,
        connections: CONNECTIONS,
        seconds: SECONDS,
        request: () => new Request(`${open.base}/healthz`),
      }));
    const post = await measured("post_person", open.post);
    const postLimited = await limited.post();
    const get = await measured("get_person", open.get);
    const getLimited = await limited.get();
    const money = { base: open.base, auth: open.auth };
    const payins = await measured("payins_16_subjects", () => payinsAcrossSubjects(money, SECONDS, open.wrkDir));
    const at50 = await eventToReceipt(money, 50, RECEIPT_SECONDS);
    const at100 = await eventToReceipt(money, 100, RECEIPT_SECONDS);

    console.log(`\nHTTP, ${CONNECTIONS} connections, ${SECONDS} s each (${health.tool})`);
    console.log(row("GET /healthz (ceiling)", health));
    console.log(row("POST person", post));
    console.log(row("GET person", get));
    console.log(`with the shared rate limit on (${LIMITED_RATE}/s, burst ${LIMITED_BURST})`);
    console.log(row("POST person, limited", postLimited));
    console.log(row("GET person, limited", getLimited));
    console.log(row("sandbox pay-in, 16 subjects", payins));
    for (const [rate, r] of [[50, at50], [100, at100]] as const) {
      console.log(
        `event to receipt at ${rate} pay-ins/s on one subject: p50 ${r.p50Ms} ms, p99 ${r.p99Ms} ms, ` +
          `${r.received} of ${r.sent} received, ${r.errors} errors`,
      );
    }
    const pct = (r: LoadResult, of = health) => round((100 * r.requestsPerSecond) / of.requestsPerSecond);
    const cpuFigures = Object.fromEntries(
      Object.entries(cpu).flatMap(([name, c]) => [
        [`http_${name}_service_cpu_us`, c.serviceUs ?? "n/a"],
        [`http_${name}_postgres_cpu_us`, c.postgresUs ?? "n/a"],
      ]),
    );
    return {
      ...cpuFigures,
      http_load_tool: health.tool,
      http_healthz_rps: round(health.requestsPerSecond, 0),
      http_healthz_p99_ms: round(health.p99Ms, 2),
      http_post_person_rps: round(post.requestsPerSecond, 0),
      http_post_person_vs_healthz_pct: pct(post),
      http_post_person_p99_ms: round(post.p99Ms, 2),
      http_post_person_errors: post.errors,
      http_get_person_rps: round(get.requestsPerSecond, 0),
      http_get_person_vs_healthz_pct: pct(get),
      http_get_person_p99_ms: round(get.p99Ms, 2),
      http_get_person_errors: get.errors,
      http_post_person_limited_rps: round(postLimited.requestsPerSecond, 0),
      http_post_person_limited_vs_unlimited_pct: pct(postLimited, post),
      http_post_person_limited_errors: postLimited.errors,
      http_get_person_limited_rps: round(getLimited.requestsPerSecond, 0),
      http_get_person_limited_vs_unlimited_pct: pct(getLimited, get),
      http_get_person_limited_errors: getLimited.errors,
      http_payins_16_subjects_rps: round(payins.requestsPerSecond, 0),
      http_payins_16_subjects_vs_post_person: round(payins.requestsPerSecond / post.requestsPerSecond, 2),
      http_payins_16_subjects_errors: payins.errors,
      receipt_at_50_payins_p50_ms: at50.p50Ms,
      receipt_at_50_payins_p99_ms: at50.p99Ms,
      receipt_at_100_payins_p50_ms: at100.p50Ms,
      receipt_at_100_payins_p99_ms: at100.p99Ms,
      receipt_payins_lost: at50.sent - at50.errors - at50.received + at100.sent - at100.errors - at100.received,
    };
  } finally {
    await Promise.all([open.stop(), limited.stop()]);
  }
}

const only = Deno.env.get("BENCH_ONLY"); // "http", "webhooks", "volume" or a FEATURE_PHASES name
let all: Figures = {};
if (!only || only === "http") {
  const figures = await benchHttp();
  console.log("");
  for (const line of describe(figures)) console.log(line);
  all = { ...all, ...figures };
}
if (!only || only === "webhooks") {
  try {
    const { benchWebhooks } = await import("./webhooks.ts");
    console.log("\nWebhooks");
    const figures = await benchWebhooks();
    for (const line of describe(figures)) console.log(line);
    all = { ...all, ...figures };
  } catch (err) {
    console.error("webhook benchmark unavailable:", err instanceof Error ? err.message : err);
  }
}
/** The phases of the webhook platform's features: each selected by its BENCH_ONLY name, run in its own module. */
const FEATURE_PHASES: { only: string; title?: string; named?: boolean; run: () => Promise<Figures> }[] = [
  {
    only: "fairness",
    title: "Delivery fairness: a sequential endpoint beside a parallel backlog",
    named: true, // part of the webhooks phase: alone only when named
    run: async () => (await import("./webhooks.ts")).benchFairness(),
  },
  { only: "filters", title: "Payload filters", run: async () => (await import("./filters.ts")).benchFilters() },
  { only: "replay", title: "Replay after disable", run: async () => (await import("./replay.ts")).benchReplay() },
  {
    only: "tracing",
    title: "Tracing: POST person, off and on",
    run: async () => (await import("./tracing.ts")).benchTracing(),
  },
  {
    only: "operational",
    title: "Operational events: recording attempts",
    run: async () => (await import("./operational.ts")).benchOperational(),
  },
  {
    only: "signing",
    title: "Signing per delivery: HMAC and Ed25519",
    run: async () => (await import("./signing.ts")).benchSigning(),
  },
  { only: "stats", run: async () => (await import("./endpoint_stats.ts")).benchEndpointStats() },
  {
    only: "throttle",
    title: "Throttle precision: rate_limit across two sets of drainers",
    run: async () => (await import("./throttle.ts")).benchThrottle(),
  },
  {
    only: "headers",
    title: "Custom headers: deliveries/s with five against none",
    run: async () => (await import("./custom_headers.ts")).benchCustomHeaders(),
  },
  {
    only: "mtls",
    title: "mTLS: deliveries/s to a receiver requiring a client certificate, beside plain https",
    run: async () => (await import("./mtls.ts")).benchMtls(),
  },
  {
    only: "oauth2",
    title: "OAuth2 client credentials: deliveries/s against plain, same run",
    run: async () => (await import("./oauth2.ts")).benchOAuth2(),
  },
  {
    only: "payload_versions",
    title: "Payload versions: rendering a body, pinned to the first version and to the latest",
    run: async () => (await import("./payload_versions.ts")).benchPayloadVersions(),
  },
];
for (const phase of FEATURE_PHASES) {
  if (only ? only !== phase.only : phase.named) continue;
  if (phase.title) console.log(`\n${phase.title}`);
  const figures = await phase.run();
  for (const line of describe(figures)) console.log(line);
  all = { ...all, ...figures };
}
if (!only || only === "volume") {
  const { benchVolumeMoney } = await import("./volume_money.ts");
  const { benchVolumeHistory } = await import("./volume_history.ts");
  const { benchVolumePrune } = await import("./volume_prune.ts");
  for (const part of [benchVolumeMoney, benchVolumeHistory, benchVolumePrune]) {
    const figures = await part();
    for (const line of describe(figures)) console.log(line);
    all = { ...all, ...figures };
  }
}
console.log(`\n${summary(all)}`);
