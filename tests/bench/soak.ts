/**
 * The sustained mix of issue 47 (docs/performance.md, "Sustained load"): one service on a fresh database, RATE sandbox
 * pay-ins and RATE GET person a second for MINUTES (defaults 40 and 15), each pay-in's `identified` event to a
 * sequential and a parallel endpoint whose receiver (in this process) answers at once. Prints a line a minute: what
 * was accepted, each endpoint's distance behind the producer, the pay-ins' p50 and p99 in that minute, the service's
 * and Postgres' CPU (cpu.ts) and the service's memory; then how long the lanes took to catch up. Measures only.
 *
 * `BENCH_ONLY=soak deno task bench` (a phase run only when named: 15 minutes), or `deno run -A tests/bench/soak.ts`;
 * BENCH_SOAK_RATE, BENCH_SOAK_MINUTES and BENCH_SOAK_CATCH_UP_S (how long to wait for the lanes after the load, 60).
 */
import { signToken } from "../../domain/integrators/tokens.ts";
import { loadConfig } from "../../domain/infra/config.ts";
import { freshDatabase } from "../support/helpers.ts";
import { dropDatabase } from "../support/databases.ts";
import { BENCH_JWT_SECRET as JWT_SECRET, startService } from "./service.ts";
import { cpf } from "../support/check_digits.ts";
import { percentile } from "./webhooks.ts";
import { type Figures, round } from "./figures.ts";
import { cpuDuring } from "./cpu.ts";

/** One minute of the soak, as its line prints it (CPU in % of one core, null without /proc). */
type Minute = {
  accepted: number;
  failed: number;
  behindSequential: number;
  behindParallel: number;
  p50Ms: number;
  p99Ms: number;
  serviceCpuPct: number | null;
  postgresCpuPct: number | null;
  rssMb: number | null;
};

/** The soak's figures (figures.ts, `soak_*`); its minutes print as they pass. */
export async function benchSoak(): Promise<Figures> {
  const rate = Number(Deno.env.get("BENCH_SOAK_RATE") ?? 40);
  const minutes = Number(Deno.env.get("BENCH_SOAK_MINUTES") ?? 15);
  const catchUpS = Number(Deno.env.get("BENCH_SOAK_CATCH_UP_S") ?? 60);
  const { accepted, failed, caughtUpAfterS, lines } = await soak(rate, minutes, catchUpS);
  const third = lines[Math.min(2, lines.length - 1)];
  return {
    soak_rate_per_s: rate,
    soak_minutes: minutes,
    soak_accepted: accepted,
    soak_failed: failed,
    soak_most_behind_sequential: Math.max(...lines.map((l) => l.behindSequential)),
    soak_most_behind_parallel: Math.max(...lines.map((l) => l.behindParallel)),
    soak_caught_up_after_s: caughtUpAfterS ?? -1,
    soak_last_vs_third_minute_p50: round(lines.at(-1)!.p50Ms / third.p50Ms, 2),
    soak_rss_mb_first_last: `${lines[0].rssMb} ${lines.at(-1)!.rssMb}`,
  };
}

async function soak(rate: number, minutes: number, catchUpS: number) {
  const url = await freshDatabase("soak");
  const service = await startService(url, { WEBHOOK_ALLOW_PRIVATE_URLS: "true", SANDBOX_RATE_LIMIT_PER_SECOND: "0" });
  const token = await signToken(loadConfig({ JWT_SECRET }), crypto.randomUUID());
  const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" };

  async function call(method: string, path: string, body?: unknown) {
    const res = await fetch(`${service.base}${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const answer = await res.json();
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(answer)}`);
    return answer;
  }

  // the receiver: counts what each endpoint got, by the pay-in's transaction id (a repeat is counted once)
  const got = { "/sequential": new Set<string>(), "/parallel": new Set<string>() };
  const receiver = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    const body = JSON.parse(await req.text());
    const path = new URL(req.url).pathname as keyof typeof got;
    got[path]?.add(body.data.transaction_id);
    return new Response(null, { status: 204 });
  });
  for (const [path, mode] of [["/sequential", "sequential"], ["/parallel", "parallel"]]) {
    await call("POST", "/api/v2/notifications/endpoints", {
      url: `http://127.0.0.1:${receiver.addr.port}${path}`,
      event_types: ["identified"],
      delivery_mode: mode,
    });
  }
  const ids: string[] = [];
  for (let i = 0; i < 16; i++) {
    const made = await call("POST", "/api/v1/subject/people", {
      person: {
        document_number: cpf(String(400000000 + i)),
        document_type: "cpf",
        social_name: "P",
        fiscal_country: "BRA",
      },
    });
    ids.push(made.data.id);
  }

  const accepted: string[] = [];
  let failed = 0;
  let minuteLatencies: number[] = [];
  const pending: Promise<void>[] = [];
  let n = 0;
  const payIn = async () => {
    const started = performance.now();
    try {
      const answer = await call("POST", "/api/sandbox/payins", {
        subject_id: ids[n++ % 16],
        value: "1.00",
        currency: "BRL",
      });
      accepted.push(answer.data.id);
      minuteLatencies.push(performance.now() - started);
    } catch {
      failed++;
    }
  };
  const read = () =>
    fetch(`${service.base}/api/v1/subject/people/${ids[n % 16]}`, { headers }).then((r) => r.body?.cancel());

  /** The service's resident memory in MB (the second field of /proc's statm, in 4 KiB pages); null without /proc. */
  const rssMb = () =>
    Deno.readTextFile(`/proc/${service.child.pid}/statm`)
      .then((statm) => Math.round(Number(statm.split(" ")[1]) * 4096 / 2 ** 20), () => null);
  const database = decodeURIComponent(new URL(url).pathname.slice(1));

  const lines: Minute[] = [];
  console.log("minute accepted failed behind_seq behind_par p50_ms p99_ms service_cpu_pct postgres_cpu_pct rss_mb");
  const started = performance.now();
  for (let minute = 1; minute <= minutes; minute++) {
    const end = started + minute * 60_000;
    const { cpuMs, wallMs } = await cpuDuring({ service: service.child.pid }, async () => {
      for (let i = 0; performance.now() < end; i++) {
        const due = started + (minute - 1) * 60_000 + (i * 1000) / rate;
        const wait = due - performance.now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        pending.push(payIn(), read().catch(() => {}));
      }
    }, database);
    const sorted = minuteLatencies.sort((a, b) => a - b);
    minuteLatencies = [];
    const pct = (ms: number | undefined) => ms === undefined ? null : round((100 * ms) / wallMs);
    const line: Minute = {
      accepted: accepted.length,
      failed,
      behindSequential: accepted.length - got["/sequential"].size,
      behindParallel: accepted.length - got["/parallel"].size,
      p50Ms: percentile(sorted, 0.5),
      p99Ms: percentile(sorted, 0.99),
      serviceCpuPct: pct(cpuMs?.service),
      postgresCpuPct: pct(cpuMs?.postgres),
      rssMb: await rssMb(),
    };
    lines.push(line);
    console.log([minute, ...Object.values(line).map((v) => typeof v === "number" ? round(v) : "-")].join(" "));
  }
  await Promise.all(pending);
  const loadEnd = performance.now();
  const caughtUp = (path: keyof typeof got) => accepted.every((id) => got[path].has(id));
  while (performance.now() - loadEnd < catchUpS * 1000 && !(caughtUp("/sequential") && caughtUp("/parallel"))) {
    await new Promise((r) => setTimeout(r, 250));
  }
  const caughtUpAfterS = caughtUp("/sequential") && caughtUp("/parallel")
    ? round((performance.now() - loadEnd) / 1000)
    : null;
  await service.stop();
  await receiver.shutdown();
  await dropDatabase(url);
  return { accepted: accepted.length, failed, caughtUpAfterS, lines };
}

if (import.meta.main) {
  const figures = await benchSoak();
  console.log(JSON.stringify(figures));
}
