/**
 * The HTTP phases of `deno task bench` (`benchHttp`): /healthz, POST person and GET person against their floor
 * (floor_server.ts), the same with the shared rate limit on, and the money path (money_path.ts). Used by the bench
 * (main.ts) and by the published figures (publish.ts).
 */
import { signToken } from "../../domain/integrators/tokens.ts";
import { loadConfig } from "../../domain/infra/config.ts";
import { load, type LoadResult } from "./http.ts";
import { type Figures, round } from "./figures.ts";
import { dropDatabase, freshDatabase } from "../support/helpers.ts";
import { cpf } from "../support/check_digits.ts";
import { BENCH_JWT_SECRET as JWT_SECRET, startFloor, startService } from "./service.ts";
import { connect } from "../../domain/infra/db.ts";
import { eventToReceipt, type Latency, payinsAcrossSubjects } from "./money_path.ts";
import { type CpuPerRequest, cpuPerRequest } from "./cpu.ts";

const SECONDS = Number(Deno.env.get("BENCH_SECONDS") ?? 10);
const CONNECTIONS = 32;
/** How many times each HTTP phase runs against its floor, the order swapped each time (docs/performance.md). */
const ROUNDS = Number(Deno.env.get("BENCH_ROUNDS") ?? 3);
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
    url,
    database: decodeURIComponent(new URL(url).pathname.slice(1)),
    base,
    auth,
    wrkDir,
    wrkEnv,
    personId,
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

/** The median of `xs`. */
const median = (xs: number[]) => {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

/** One phase of the service and the same phase of the floor, each with what a request cost both sides. */
type Pair = { service: LoadResult; floor: LoadResult; serviceCpu: CpuPerRequest; floorCpu: CpuPerRequest };

/**
 * What a request cost one side (`serviceUs`: the server's process; `postgresUs`: its Postgres sessions) against what it
 * cost the floor's, each round's ratio and their median: the issue-47 rows (docs/performance.md, "The money path").
 */
function cpuAgainstFloor(
  name: string,
  rounds: Pair[],
  side: keyof CpuPerRequest,
  label: string,
): [string, string | number][] {
  const ratios = rounds.flatMap((p) =>
    p.serviceCpu[side] !== null && p.floorCpu[side] ? [p.serviceCpu[side]! / p.floorCpu[side]!] : []
  );
  if (ratios.length < rounds.length) return [[`http_${name}_${label}_cpu_vs_floor`, "n/a"]];
  return [
    [`http_${name}_${label}_cpu_vs_floor`, round(median(ratios), 2)],
    [`http_${name}_${label}_cpu_vs_floor_rounds`, ratios.map((r) => r.toFixed(2)).join(" ")],
  ];
}

/**
 * /healthz, POST person and GET person, each against the floor (tests/bench/floor_server.ts) right before or after it,
 * BENCH_ROUNDS times with the order swapped each round, so a pause of the machine falls on both sides of a ratio;
 * then the two person calls on a service with the per-company rate limit on (its buckets shared in Postgres), each
 * right after its unlimited twin; then the money path.
 */
export async function benchHttp(): Promise<Figures> {
  // pay-ins unthrottled and a receiver on loopback for the money-path phases (tests/bench/money_path.ts)
  const open = await benchService("bench_http", {
    SANDBOX_RATE_LIMIT_PER_SECOND: "0",
    WEBHOOK_ALLOW_PRIVATE_URLS: "true",
  });
  const limited = await benchService("bench_http_limited", {
    RATE_LIMIT_PER_SECOND: LIMITED_RATE,
    RATE_LIMIT_BURST: LIMITED_BURST,
  });
  const floor = await startFloor(open.url);
  try {
    // the floor reads the same person, copied with its id into its own table
    const db = connect(open.url, { max: 1 });
    await db`insert into bench_floor_people select * from people where id = ${open.personId}`;
    await db.end();
    // /healthz of either server: no script, the same request for wrk and the fetch generator
    const healthz = (base: string) => () =>
      load({
        url: `${base}/healthz`,
        connections: CONNECTIONS,
        seconds: SECONDS,
        request: () => new Request(`${base}/healthz`),
      });
    // a person phase on the floor: the service's wrk script (its paths are the floor's) or the same request
    const onFloor = (script: string, request: () => Request) => () =>
      load({
        url: floor.base,
        connections: CONNECTIONS,
        seconds: SECONDS,
        script: `${open.wrkDir}${script}`,
        env: open.wrkEnv,
        request,
      });
    const phases = {
      healthz: { service: healthz(open.base), floor: healthz(floor.base) },
      post_person: {
        service: open.post,
        floor: onFloor("post_person.lua", newPersonRequest(floor.base, open.auth)),
      },
      get_person: {
        service: open.get,
        floor: onFloor("get_person.lua", () => new Request(`${floor.base}/api/v1/subject/people/${open.personId}`)),
      },
    };
    const pairs: Record<keyof typeof phases, Pair[]> = { healthz: [], post_person: [], get_person: [] };
    const requests = (r: LoadResult) => r.requestsPerSecond * SECONDS;
    for (let round = 0; round < ROUNDS; round++) {
      for (const [name, phase] of Object.entries(phases) as [keyof typeof phases, typeof phases.healthz][]) {
        const service = () => cpuPerRequest(open.pid, phase.service, requests, open.database);
        const plain = () => cpuPerRequest(floor.child.pid, phase.floor, requests, open.database);
        const first = round % 2 === 0 ? await service() : await plain();
        const second = round % 2 === 0 ? await plain() : await service();
        const [s, f] = round % 2 === 0 ? [first, second] : [second, first];
        pairs[name].push({ service: s.result, floor: f.result, serviceCpu: s.cpu, floorCpu: f.cpu });
      }
    }
    const postLimited = await limited.post();
    const post = pairs.post_person[pairs.post_person.length - 1].service; // the limited phase's twin
    const getLimited = await limited.get();
    const get = pairs.get_person[pairs.get_person.length - 1].service;
    const money = { base: open.base, auth: open.auth };
    // the money path's figures, each its rounds' median (issue 47's table: docs/performance.md, "The money path")
    const payinRounds: { result: LoadResult; cpu: CpuPerRequest }[] = [];
    const at100Rounds: Latency[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      payinRounds.push(
        await cpuPerRequest(open.pid, () => payinsAcrossSubjects(money, SECONDS, open.wrkDir), requests, open.database),
      );
      at100Rounds.push(await eventToReceipt(money, 100, RECEIPT_SECONDS));
    }
    const payins = payinRounds[Math.floor(payinRounds.length / 2)];
    const at50 = await eventToReceipt(money, 50, RECEIPT_SECONDS);
    const at100 = {
      p50Ms: median(at100Rounds.map((r) => r.p50Ms)),
      p99Ms: median(at100Rounds.map((r) => r.p99Ms)),
      sent: at100Rounds.reduce((n, r) => n + r.sent, 0),
      received: at100Rounds.reduce((n, r) => n + r.received, 0),
      errors: at100Rounds.reduce((n, r) => n + r.errors, 0),
    };

    console.log(
      `\nHTTP, ${CONNECTIONS} connections, ${SECONDS} s each (${post.tool}), ${ROUNDS} rounds against the floor`,
    );
    for (const [name, rounds] of Object.entries(pairs)) {
      for (const [i, p] of rounds.entries()) {
        console.log(row(`${name} ${i + 1}`, p.service));
        console.log(row(`${name} ${i + 1}, floor`, p.floor));
      }
    }
    console.log(`with the shared rate limit on (${LIMITED_RATE}/s, burst ${LIMITED_BURST})`);
    console.log(row("POST person, limited", postLimited));
    console.log(row("GET person, limited", getLimited));
    for (const [i, p] of payinRounds.entries()) console.log(row(`sandbox pay-in, 16 subjects ${i + 1}`, p.result));
    for (const [rate, r] of [[50, at50], ...at100Rounds.map((r) => [100, r] as const)] as const) {
      console.log(
        `event to receipt at ${rate} pay-ins/s on one subject: p50 ${r.p50Ms} ms, p99 ${r.p99Ms} ms, ` +
          `${r.received} of ${r.sent} received, ${r.errors} errors`,
      );
    }
    const pct = (r: LoadResult, of: LoadResult) => round((100 * r.requestsPerSecond) / of.requestsPerSecond);
    const cpuOf = (c: CpuPerRequest[], side: keyof CpuPerRequest) =>
      c.some((x) => x[side] === null) ? "n/a" : Math.round(median(c.map((x) => x[side]!)));
    const againstFloor = Object.fromEntries(
      Object.entries(pairs).flatMap(([name, rounds]) => {
        const ratios = rounds.map((p) => p.service.requestsPerSecond / p.floor.requestsPerSecond);
        return [
          [`http_${name}_rps`, round(median(rounds.map((p) => p.service.requestsPerSecond)), 0)],
          [`http_${name}_p50_ms`, round(median(rounds.map((p) => p.service.p50Ms)), 2)],
          [`http_${name}_p95_ms`, round(median(rounds.map((p) => p.service.p95Ms)), 2)],
          [`http_${name}_p99_ms`, round(median(rounds.map((p) => p.service.p99Ms)), 2)],
          [`http_${name}_errors`, rounds.reduce((n, p) => n + p.service.errors, 0)],
          [`http_floor_${name}_rps`, round(median(rounds.map((p) => p.floor.requestsPerSecond)), 0)],
          [`http_${name}_vs_floor`, round(median(ratios), 2)],
          [`http_${name}_vs_floor_rounds`, ratios.map((r) => r.toFixed(2)).join(" ")],
          [`http_${name}_service_cpu_us`, cpuOf(rounds.map((p) => p.serviceCpu), "serviceUs")],
          [`http_${name}_postgres_cpu_us`, cpuOf(rounds.map((p) => p.serviceCpu), "postgresUs")],
          [`http_floor_${name}_cpu_us`, cpuOf(rounds.map((p) => p.floorCpu), "serviceUs")],
          [`http_floor_${name}_postgres_cpu_us`, cpuOf(rounds.map((p) => p.floorCpu), "postgresUs")],
          ...cpuAgainstFloor(name, rounds, "serviceUs", "service"),
          ...cpuAgainstFloor(name, rounds, "postgresUs", "postgres"),
        ];
      }),
    );
    const payinsRps = median(payinRounds.map((p) => p.result.requestsPerSecond));
    const payinCpu = (side: keyof CpuPerRequest) => cpuOf(payinRounds.map((p) => p.cpu), side);
    const payinCpuRounds = (side: keyof CpuPerRequest) =>
      payinRounds.map((p) => p.cpu[side] === null ? "n/a" : Math.round(p.cpu[side]!)).join(" ");
    return {
      http_load_tool: post.tool,
      http_rounds: ROUNDS,
      ...againstFloor,
      http_post_person_limited_rps: round(postLimited.requestsPerSecond, 0),
      http_post_person_limited_vs_unlimited_pct: pct(postLimited, post),
      http_post_person_limited_errors: postLimited.errors,
      http_get_person_limited_rps: round(getLimited.requestsPerSecond, 0),
      http_get_person_limited_vs_unlimited_pct: pct(getLimited, get),
      http_get_person_limited_errors: getLimited.errors,
      http_payins_16_subjects_rps: round(payinsRps, 0),
      http_payins_16_subjects_p50_ms: round(payins.result.p50Ms, 2),
      http_payins_16_subjects_p95_ms: round(payins.result.p95Ms, 2),
      http_payins_16_subjects_p99_ms: round(payins.result.p99Ms, 2),
      http_payins_16_subjects_vs_post_person: round(
        payinsRps / median(pairs.post_person.map((p) => p.service.requestsPerSecond)),
        2,
      ),
      http_payins_16_subjects_errors: payins.result.errors,
      http_payins_16_subjects_service_cpu_us: payinCpu("serviceUs"),
      http_payins_16_subjects_service_cpu_us_rounds: payinCpuRounds("serviceUs"),
      http_payins_16_subjects_postgres_cpu_us: payinCpu("postgresUs"),
      http_payins_16_subjects_postgres_cpu_us_rounds: payinCpuRounds("postgresUs"),
      receipt_at_50_payins_p50_ms: at50.p50Ms,
      receipt_at_50_payins_p99_ms: at50.p99Ms,
      receipt_at_100_payins_p50_ms: at100.p50Ms,
      receipt_at_100_payins_p99_ms: at100.p99Ms,
      receipt_at_100_payins_rounds: at100Rounds.map((r) => `${r.p50Ms}/${r.p99Ms}`).join(" "),
      receipt_payins_lost: at50.sent - at50.errors - at50.received + at100.sent - at100.errors - at100.received,
    };
  } finally {
    floor.child.kill("SIGTERM");
    await floor.child.status;
    await Promise.all([open.stop(), limited.stop()]);
  }
}
