/**
 * What tracing costs a request: POST person on a service with tracing off (the default) and on the same code with
 * OTEL_DENO=true exporting every span over OTLP (http/protobuf, the runtime's default) to a collector on loopback that
 * accepts and drops them. The two services run side by side and are loaded in turns, off, on, off, on, so a pause of
 * the machine falls on both; each figure is the mean of its two turns (docs/production.md, "Tracing").
 */
import { signToken } from "../../domain/integrators/tokens.ts";
import { loadConfig } from "../../domain/infra/config.ts";
import { dropDatabase, freshDatabase } from "../support/helpers.ts";
import { cpf } from "../support/check_digits.ts";
import { type Figures, round } from "./figures.ts";
import { load, type LoadResult } from "./http.ts";
import { BENCH_JWT_SECRET as JWT_SECRET, startService } from "./service.ts";

const SECONDS = Number(Deno.env.get("BENCH_SECONDS") ?? 10);
const CONNECTIONS = 32;
const TURNS = 2;

let cpfs = 0;
const nextCpf = () => cpf(String(300_000_000 + (cpfs++ % 600_000_000)));

/** A collector that takes whatever the runtime exports and answers as OTLP/HTTP does; counts the bytes of traces. */
function otlpSink() {
  let traceBytes = 0;
  let exports = 0;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    const bytes = (await req.arrayBuffer()).byteLength;
    if (new URL(req.url).pathname === "/v1/traces") {
      traceBytes += bytes;
      exports++;
    }
    return new Response(null, { status: 200, headers: { "content-type": "application/x-protobuf" } });
  });
  return {
    endpoint: `http://127.0.0.1:${server.addr.port}`,
    counts: () => ({ traceBytes, exports }),
    close: () => server.shutdown(),
  };
}

async function service(name: string, env: Record<string, string>) {
  const url = await freshDatabase(name);
  const process = await startService(url, env);
  const token = await signToken(loadConfig({ JWT_SECRET }), crypto.randomUUID());
  const auth = { authorization: `Bearer ${token}` };
  const post = () =>
    load({
      url: process.base,
      connections: CONNECTIONS,
      seconds: SECONDS,
      script: new URL("./wrk/post_person.lua", import.meta.url).pathname,
      env: { TOKEN: token, PERSON_ID: "" },
      request: () =>
        new Request(`${process.base}/api/v1/subject/people`, {
          method: "POST",
          headers: { ...auth, "content-type": "application/json" },
          body: JSON.stringify({
            person: { document_number: nextCpf(), document_type: "cpf", social_name: "Bench", fiscal_country: "BRA" },
          }),
        }),
    });
  return {
    post,
    stop: async () => {
      await process.stop();
      await dropDatabase(url);
    },
  };
}

const mean = (results: LoadResult[], pick: (r: LoadResult) => number) =>
  results.reduce((sum, r) => sum + pick(r), 0) / results.length;

export async function benchTracing(): Promise<Figures> {
  const sink = otlpSink();
  const off = await service("bench_tracing_off", {});
  const on = await service("bench_tracing_on", {
    OTEL_DENO: "true",
    OTEL_EXPORTER_OTLP_ENDPOINT: sink.endpoint,
    OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf",
    OTEL_SERVICE_NAME: "payments-api-bench",
    OTEL_DENO_CONSOLE: "ignore",
  });
  try {
    const offRuns: LoadResult[] = [];
    const onRuns: LoadResult[] = [];
    for (let turn = 0; turn < TURNS; turn++) {
      offRuns.push(await off.post());
      onRuns.push(await on.post());
    }
    // the last batches are exported within the runtime's schedule delay (5 s by default)
    await new Promise((r) => setTimeout(r, 6_000));
    const { traceBytes } = sink.counts();
    const offRps = mean(offRuns, (r) => r.requestsPerSecond);
    const onRps = mean(onRuns, (r) => r.requestsPerSecond);
    const onRequests = onRuns.reduce((n, r) => n + r.requestsPerSecond * SECONDS, 0);
    for (const [name, runs] of [["tracing off", offRuns], ["tracing on", onRuns]] as const) {
      for (const r of runs) {
        console.log(
          `POST person, ${name.padEnd(11)} ${r.requestsPerSecond.toFixed(0).padStart(6)} req/s   p50 ${
            r.p50Ms.toFixed(2)
          } ms   p99 ${r.p99Ms.toFixed(2)} ms   errors ${r.errors}`,
        );
      }
    }
    return {
      tracing_off_post_person_rps: round(offRps, 0),
      tracing_on_post_person_rps: round(onRps, 0),
      tracing_on_vs_off_pct: round((100 * onRps) / offRps),
      tracing_off_post_person_p99_ms: round(mean(offRuns, (r) => r.p99Ms), 2),
      tracing_on_post_person_p99_ms: round(mean(onRuns, (r) => r.p99Ms), 2),
      tracing_export_bytes_per_post: round(traceBytes / Math.max(1, onRequests), 0),
      tracing_errors: offRuns.concat(onRuns).reduce((n, r) => n + r.errors, 0),
    };
  } finally {
    await Promise.all([off.stop(), on.stop()]);
    await sink.close();
  }
}
