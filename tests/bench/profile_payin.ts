/**
 * One money-path call under load, for a lever's quick pairs and its profile (docs/performance.md, "The money path"):
 * a service of its own on a fresh database, sandbox pay-ins on 16 subjects (PHASE=get or post: GET or POST person), 32
 * at once or RATE a second for SECONDS, then the CPU per request of the service and its Postgres sessions from /proc,
 * and the service's V8 CPU profile in OUT (default `prof`, beside the working directory); PROF=0: no profile;
 * PROF=heap: what the service allocated per request instead, by component, and its heap profile in OUT
 * (heap_profile.ts; docs/performance.md, "What a request allocates"). SERVER=floor loads the bench's floor instead.
 * Measures only.
 */
import { signToken } from "../../domain/integrators/tokens.ts";
import { loadConfig } from "../../domain/infra/config.ts";
import { freshDatabase } from "../support/helpers.ts";
import { dropDatabase } from "../support/databases.ts";
import { connect } from "../../domain/infra/db.ts";
import { migrate } from "../../domain/infra/migrate.ts";
import { BENCH_JWT_SECRET as JWT_SECRET } from "./service.ts";
import { cpf } from "../support/check_digits.ts";
import { cpuPerRequest } from "./cpu.ts";
import { sampleAllocations } from "./heap_profile.ts";

const phase = Deno.env.get("PHASE") ?? "payin";
const seconds = Number(Deno.env.get("SECONDS") ?? 10);
const url = await freshDatabase("profile");
const floor = Deno.env.get("SERVER") === "floor";
if (floor) {
  // the floor copies the service's `people`, which the service's migrations make
  const sql = connect(url, { max: 1 });
  await migrate(sql, url);
  await sql.end();
}
const port = 18000 + Math.floor(Math.random() * 1000);
const prof = Deno.env.get("PROF");
const out = Deno.env.get("OUT") ?? "prof";
const inspectorPort = port + 1000;
const profiling = prof === "0"
  ? []
  : prof === "heap"
  ? [`--inspect=127.0.0.1:${inspectorPort}`]
  : ["--cpu-prof", `--cpu-prof-dir=${out}`];
const child = new Deno.Command("deno", {
  args: [
    "run",
    ...profiling,
    "--v8-flags=--max-semi-space-size=8,--max-old-space-size=512",
    "-A",
    // SERVER=floor: the bench's floor (floor_server.ts) under the same load, for GET and POST person
    floor ? "tests/bench/floor_server.ts" : "main.ts",
  ],
  env: {
    DATABASE_URL: url,
    PORT: String(port),
    JWT_SECRET,
    LOG_LEVEL: "warn",
    RATE_LIMIT_PER_SECOND: "0",
    SANDBOX_RATE_LIMIT_PER_SECOND: "0",
    SHUTDOWN_DRAIN_MS: "0",
    SECRET_ENCRYPTION_KEY: "5b".repeat(32),
  },
  stdout: "null",
  stderr: "inherit",
}).spawn();
const base = `http://127.0.0.1:${port}`;
for (let i = 0; i < 200; i++) {
  try {
    if ((await fetch(`${base}/healthz`)).ok) break;
  } catch { /* not yet */ }
  await new Promise((r) => setTimeout(r, 100));
}
const token = await signToken(loadConfig({ JWT_SECRET }), crypto.randomUUID());
const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" };
const ids: string[] = [];
for (let i = 0; i < 16; i++) {
  const r = await fetch(`${base}/api/v1/subject/people`, {
    method: "POST",
    headers,
    body: JSON.stringify({
      person: {
        document_number: cpf(String(200000000 + i)),
        document_type: "cpf",
        social_name: "P",
        fiscal_country: "BRA",
      },
    }),
  });
  ids.push((await r.json()).data.id);
}
console.log(`PID ${child.pid}`);
await new Promise((r) => setTimeout(r, Number(Deno.env.get("WAIT_MS") ?? 0)));
let n = 0;
let done = 0;
const end = Date.now() + seconds * 1000;
const one = () => {
  n++;
  if (phase === "get") return fetch(`${base}/api/v1/subject/people/${ids[n % 16]}`, { headers });
  if (phase === "post") {
    return fetch(`${base}/api/v1/subject/people`, {
      method: "POST",
      headers,
      body: JSON.stringify({
        person: {
          document_number: cpf(String(300000000 + n)),
          document_type: "cpf",
          social_name: "P",
          fiscal_country: "BRA",
        },
      }),
    });
  }
  return fetch(`${base}/api/sandbox/payins`, {
    method: "POST",
    headers,
    body: JSON.stringify({ subject_id: ids[n % 16], value: "1.00", currency: "BRL" }),
  });
};
const database = decodeURIComponent(new URL(url).pathname.slice(1));
const rate = Number(Deno.env.get("RATE") ?? 0);
// at a fixed rate (an open loop: one request every 1/RATE s, answered or not) or, without RATE, 32 at once
const atRate = async () => {
  const pending: Promise<void>[] = [];
  const start = performance.now();
  for (let i = 0; i < rate * seconds; i++) {
    const wait = start + (i * 1000) / rate - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    pending.push(one().then((r) => r.arrayBuffer()).then(() => void done++));
  }
  await Promise.all(pending);
};
const saturated = () =>
  Promise.all(Array.from({ length: 32 }, async () => {
    while (Date.now() < end) {
      const r = await one();
      await r.arrayBuffer();
      done++;
    }
  })).then(() => {});
const load = rate ? atRate : saturated;
if (prof === "heap") {
  const { profile, allocation } = await sampleAllocations(inspectorPort, load);
  await Deno.mkdir(out, { recursive: true });
  await Deno.writeTextFile(`${out}/${phase}-${Date.now()}.heapprofile`, JSON.stringify(profile));
  const perRequest = (bytes: number) => Math.round(bytes / done);
  const byComponent = Object.entries(allocation.byComponent).sort(([, a], [, b]) => b - a)
    .map(([component, bytes]) => [component, perRequest(bytes)]);
  console.log(JSON.stringify({ phase, requests: done, bytesPerRequest: perRequest(allocation.total) }));
  for (const [component, bytes] of byComponent) console.log(`${String(bytes).padStart(8)} B  ${component}`);
  console.log("heaviest frames (bytes per request, self):");
  for (const f of allocation.frames.slice(0, 25)) {
    console.log(`${String(perRequest(f.bytes)).padStart(8)} B  ${f.frame}  [${f.component}]`);
  }
} else {
  const { cpu } = await cpuPerRequest(child.pid, load, () => done, database);
  console.log(JSON.stringify({ phase, requests: done, perSecond: done / seconds, ...cpu }));
}
child.kill("SIGTERM");
await child.status;
await dropDatabase(url);
