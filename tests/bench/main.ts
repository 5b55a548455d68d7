/**
 * `deno task bench`: HTTP figures for the person endpoints against their floor, a plain server on the same stack
 * (api.ts), then the webhook delivery figures and each feature's phase. Each figure prints as `name value`, then what it means and, where the project set one, its
 * target and whether this run met it (tests/bench/figures.ts). Measures only: a missed target does not fail it.
 */
import { describe, type Figures, summary } from "./figures.ts";
import { benchHttp } from "./api.ts";

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
    only: "search",
    title: "Search by transaction id: one company's 30,000 events",
    run: async () => (await import("./transaction_search.ts")).benchTransactionSearch(),
  },
  {
    only: "payload_versions",
    title: "Payload versions: rendering a body, pinned to the first version and to the latest",
    run: async () => (await import("./payload_versions.ts")).benchPayloadVersions(),
  },
  {
    only: "batches",
    title: "Batches: events/s in batches of 50 against one by one, and the latency max_wait_ms adds",
    run: async () => (await import("./batches.ts")).benchBatches(),
  },
  {
    only: "destinations",
    title: "Destinations: deliveries/s to each registered broker beside HTTP, parallel and sequential backlogs",
    named: true, // needs the local brokers running and minutes per transport: alone only when named
    run: async () => (await import("./destinations.ts")).benchDestinations(),
  },
  {
    only: "soak",
    title: "Sustained load: pay-ins and person reads at a steady rate, a sequential and a parallel endpoint",
    named: true, // 15 minutes by default: alone only when named
    run: async () => (await import("./soak.ts")).benchSoak(),
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
