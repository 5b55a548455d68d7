/**
 * What sealing the stored answers of idempotent requests costs (docs/production.md, "Webhook signing secrets at
 * rest"). Not part of `deno task bench`; run one part at a time:
 *
 *   deno run -A tests/bench/idempotency_seal.ts seal    # sealBytes / openBytes of answers of typical sizes, in process
 *   deno run -A tests/bench/idempotency_seal.ts http    # POST person with and without an Idempotency-Key, wrk, 32 conn.
 *   deno run -A tests/bench/idempotency_seal.ts start   # the pass at start over a table of stored answers
 *
 * `http` only drives HTTP, so the same file run from a checkout of the previous version measures it there.
 * BENCH_SECONDS (default 5) and BENCH_ROUNDS (default 3) size `http`; BENCH_ROWS (default 100000) sizes `start`.
 */
import { signToken } from "../../domain/integrators/tokens.ts";
import { loadConfig } from "../../domain/infra/config.ts";
import { connect } from "../../domain/infra/db.ts";
import { migrate } from "../../domain/infra/migrate.ts";
import { createSecretBox } from "../../domain/infra/secret_box.ts";
import { load } from "./http.ts";
import { dropDatabase, freshDatabase } from "../support/helpers.ts";
import { BENCH_JWT_SECRET as JWT_SECRET, startService } from "./service.ts";

const part = Deno.args[0] ?? "seal";
const median = (xs: number[]) => xs.toSorted((a, b) => a - b)[Math.floor(xs.length / 2)];

/** An endpoint's answer as the service writes it (about 700 bytes), and a larger one. */
function answers(): Record<string, Uint8Array> {
  const endpoint = JSON.stringify({
    data: {
      id: crypto.randomUUID(),
      company_id: crypto.randomUUID(),
      url: "https://example.com/hooks/payments",
      status: "active",
      disabled_reason: null,
      disabled_at: null,
      enabled_events: ["*"],
      delivery_mode: "parallel",
      event_payload_type: "snapshot",
      inject_secret_in_body: false,
      wrap_in_notification: false,
      max_concurrency: 10,
      event_mapping: null,
      secret: crypto.getRandomValues(new Uint8Array(32)).toHex(),
      previous_secret: null,
      previous_secret_expires_at: null,
      previous_secrets: [],
      inserted_at: new Date().toISOString(),
      updated_at: new Date().toISOString(),
    },
  });
  const encoder = new TextEncoder();
  return { endpoint: encoder.encode(endpoint), "16 KB": encoder.encode("x".repeat(16 * 1024)) };
}

async function benchSeal() {
  const box = await createSecretBox(crypto.getRandomValues(new Uint8Array(32)));
  const context = `idempotency_keys:${crypto.randomUUID()}:bench-key`;
  for (const [name, plain] of Object.entries(answers())) {
    const n = 20_000;
    for (let i = 0; i < 1000; i++) await box.openBytes(await box.sealBytes(plain, context), context); // warm-up
    const sealed: Uint8Array[] = [];
    let started = performance.now();
    for (let i = 0; i < n; i++) sealed.push(await box.sealBytes(plain, context));
    const sealUs = (performance.now() - started) * 1000 / n;
    started = performance.now();
    for (let i = 0; i < n; i++) await box.openBytes(sealed[i], context);
    const openUs = (performance.now() - started) * 1000 / n;
    console.log(
      `seal_${name.replace(" ", "")}_us ${sealUs.toFixed(1)}\n  sealBytes of a ${plain.length}-byte answer (µs)\n` +
        `open_${name.replace(" ", "")}_us ${openUs.toFixed(1)}\n  openBytes of it (µs), what a replay adds`,
    );
  }
}

async function benchHttp() {
  const seconds = Number(Deno.env.get("BENCH_SECONDS") ?? 5);
  const rounds = Number(Deno.env.get("BENCH_ROUNDS") ?? 3);
  const url = await freshDatabase("bench_idempotency");
  const { child, base } = await startService(url, { LOG_LEVEL: "error" });
  try {
    const token = await signToken(loadConfig({ JWT_SECRET }), crypto.randomUUID());
    const wrk = new URL("./wrk/", import.meta.url).pathname;
    const plain: number[][] = [];
    const keyed: number[][] = [];
    const run = async (script: string) => {
      const r = await load({
        url: base,
        connections: 32,
        seconds,
        script: `${wrk}${script}`,
        env: { TOKEN: token },
        request: () => {
          throw new Error("this bench needs wrk (apt-get install wrk)");
        },
      });
      if (r.errors) console.error(`${script}: ${r.errors} errors`);
      return [r.requestsPerSecond, r.p50Ms, r.p99Ms];
    };
    await run("post_person.lua"); // warm-up
    for (let i = 0; i < rounds; i++) {
      plain.push(await run("post_person.lua"));
      keyed.push(await run("post_person_idempotent.lua"));
    }
    for (const [name, runs] of [["post_person", plain], ["post_person_idempotent", keyed]] as const) {
      console.log(
        `${name}: ${median(runs.map((r) => r[0])).toFixed(0)} req/s, p50 ${
          median(runs.map((r) => r[1])).toFixed(2)
        } ms,` +
          ` p99 ${median(runs.map((r) => r[2])).toFixed(2)} ms (medians of ${rounds} rounds of ${seconds} s;` +
          ` req/s per round: ${runs.map((r) => r[0].toFixed(0)).join(", ")})`,
      );
    }
  } finally {
    child.kill("SIGTERM");
    await child.status;
    await dropDatabase(url);
  }
}

async function benchStart() {
  const { sealStoredAnswers } = await import("../../domain/requests/idempotency.ts");
  const rows = Number(Deno.env.get("BENCH_ROWS") ?? 100_000);
  const url = await freshDatabase("bench_idempotency_start");
  const sql = connect(url, { max: 2 });
  try {
    await migrate(sql, url);
    const box = await createSecretBox(crypto.getRandomValues(new Uint8Array(32)));
    const body = answers().endpoint;
    const fill = async (sealed: boolean) => {
      await sql`truncate idempotency_keys`;
      const one = sealed ? await box.sealBytes(body, "bench") : body; // the pass does not open what is sealed
      await sql`
        insert into idempotency_keys
          (company_id, key, request_hash, claim_id, response_status, response_content_type, response_body)
        select gen_random_uuid(), 'key-' || i, '\\x00', gen_random_uuid(), 201, 'application/json', ${one}
        from generate_series(1, ${rows}) i`;
      await sql`vacuum analyze idempotency_keys`;
    };
    await fill(true);
    const times: number[] = [];
    for (let i = 0; i < 3; i++) {
      const started = performance.now();
      await sealStoredAnswers(sql, box, { reseal: false });
      times.push(performance.now() - started);
    }
    console.log(`start pass over ${rows} sealed answers (nothing to do): ${median(times).toFixed(0)} ms`);
    await fill(false);
    const started = performance.now();
    const result = await sealStoredAnswers(sql, box, { reseal: false });
    console.log(
      `start pass sealing ${result.sealed} plain answers: ${(performance.now() - started).toFixed(0)} ms` +
        ` (${((performance.now() - started) * 1000 / rows).toFixed(0)} µs a row)`,
    );
  } finally {
    await sql.end();
    await dropDatabase(url);
  }
}

if (part === "seal") await benchSeal();
else if (part === "http") await benchHttp();
else if (part === "start") await benchStart();
else throw new Error(`unknown part ${part}: seal, http or start`);
