/**
 * `deno task bench`: HTTP figures for the person endpoints against /healthz as the ceiling, then the webhook
 * delivery figures. Measures only; nothing here asserts a timing.
 */
import { signToken } from "../../domain/platform/tokens.ts";
import { load, type LoadResult } from "./http.ts";
import { freshDatabase } from "../helpers.ts";

const PORT = 4700 + Math.floor(Math.random() * 200);
const BASE = `http://127.0.0.1:${PORT}`;
const SECONDS = Number(Deno.env.get("BENCH_SECONDS") ?? 10);
const CONNECTIONS = 32;
const JWT_SECRET = "bench-secret";

async function startService(databaseUrl: string) {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", "main.ts"],
    cwd: new URL("../..", import.meta.url).pathname,
    // the per-company rate limit off: the bench measures the service's ceiling with one company's token
    env: { DATABASE_URL: databaseUrl, PORT: String(PORT), JWT_SECRET, LOG_LEVEL: "info", RATE_LIMIT_PER_SECOND: "0" },
    stdout: "null",
    stderr: "inherit",
  }).spawn();
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    try {
      if ((await fetch(`${BASE}/healthz`)).ok) return child;
    } catch { /* not up yet */ }
    await new Promise((r) => setTimeout(r, 200));
  }
  child.kill("SIGKILL");
  throw new Error("service did not start");
}

function row(name: string, r: LoadResult) {
  return `${name.padEnd(22)} ${r.requestsPerSecond.toFixed(0).padStart(8)} req/s   p50 ${
    r.p50Ms.toFixed(2).padStart(6)
  } ms   p99 ${r.p99Ms.toFixed(2).padStart(6)} ms   errors ${r.errors}`;
}

async function benchHttp() {
  const url = await freshDatabase("bench_http");
  const service = await startService(url);
  try {
    const token = await signToken(JWT_SECRET, crypto.randomUUID());
    const auth = { authorization: `Bearer ${token}` };
    const created = await fetch(`${BASE}/api/v1/subject/people`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: JSON.stringify({
        person: { document_number: "52998224725", document_type: "cpf", social_name: "Bench", fiscal_country: "BRA" },
      }),
    }).then((r) => r.json());
    const personId: string = created.data.id;
    const env = { TOKEN: token, PERSON_ID: personId };
    const wrkDir = new URL("./wrk/", import.meta.url).pathname;
    let n = 0;
    const cpf = () => {
      const d = String(100_000_000 + (n++ % 800_000_000)).split("").map(Number);
      for (const len of [9, 10]) {
        const sum = d.slice(0, len).reduce((s, v, i) => s + v * (len + 1 - i), 0);
        d.push(((sum * 10) % 11) % 10);
      }
      return d.join("");
    };

    const health = await load({
      url: `${BASE}/healthz`,
      connections: CONNECTIONS,
      seconds: SECONDS,
      request: () => new Request(`${BASE}/healthz`),
    });
    const post = await load({
      url: BASE,
      connections: CONNECTIONS,
      seconds: SECONDS,
      script: `${wrkDir}post_person.lua`,
      env,
      request: () =>
        new Request(`${BASE}/api/v1/subject/people`, {
          method: "POST",
          headers: { ...auth, "content-type": "application/json" },
          body: JSON.stringify({
            person: { document_number: cpf(), document_type: "cpf", social_name: "Bench", fiscal_country: "BRA" },
          }),
        }),
    });
    const get = await load({
      url: BASE,
      connections: CONNECTIONS,
      seconds: SECONDS,
      script: `${wrkDir}get_person.lua`,
      env,
      request: () => new Request(`${BASE}/api/v1/subject/people/${personId}`, { headers: auth }),
    });

    console.log(`\nHTTP, ${CONNECTIONS} connections, ${SECONDS} s each (${health.tool})`);
    console.log(row("GET /healthz (ceiling)", health));
    console.log(row("POST person", post));
    console.log(row("GET person", get));
    const ratio = (r: LoadResult) => (100 * r.requestsPerSecond / health.requestsPerSecond).toFixed(1);
    console.log(
      `POST person: ${ratio(post)}% of /healthz (target >= 30%), p99 ${post.p99Ms.toFixed(1)} ms (target < 25)`,
    );
    console.log(
      `GET person:  ${ratio(get)}% of /healthz (target >= 50%), p99 ${get.p99Ms.toFixed(1)} ms (target < 25)`,
    );
  } finally {
    service.kill("SIGTERM");
    await service.status;
  }
}

const only = Deno.env.get("BENCH_ONLY"); // "http" or "webhooks"
if (only !== "webhooks") await benchHttp();
if (only !== "http") {
  try {
    const { benchWebhooks } = await import("./webhooks.ts");
    console.log("\nWebhooks");
    const figures = await benchWebhooks();
    for (const [k, v] of Object.entries(figures)) console.log(`${k.padEnd(40)} ${v}`);
  } catch (err) {
    console.error("webhook benchmark unavailable:", err instanceof Error ? err.message : err);
  }
}
