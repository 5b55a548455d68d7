/**
 * Money rules against history (`BENCH_ONLY=volume`): pay-ins/s into one subject with no history and with 100,000
 * earlier transactions this year, and the transaction_values answer at both sizes. History is seeded with set-based
 * SQL, as the service writes it (identified pay-ins and their `identified` events). Measures only.
 */
import postgres from "postgres";
import { signToken } from "../../domain/integrators/tokens.ts";
import { loadConfig } from "../../domain/infra/config.ts";
import { dropDatabase, freshDatabase } from "../support/helpers.ts";
import { type Figures, round } from "./figures.ts";
import { load, type LoadResult } from "./http.ts";
import { BENCH_JWT_SECRET, startService } from "./service.ts";

const SECONDS = Number(Deno.env.get("BENCH_SECONDS") ?? 10);
const HISTORY = Number(Deno.env.get("BENCH_HISTORY") ?? 100_000);
const CONNECTIONS = 16;

export async function benchVolumeMoney(): Promise<Figures> {
  const url = await freshDatabase("bench_volume_money");
  const { child, base } = await startService(url, { SANDBOX_RATE_LIMIT_PER_SECOND: "0" });
  const sql = postgres(url, { max: 2, onnotice: () => {} });
  try {
    const companyId = crypto.randomUUID();
    const token = await signToken(loadConfig({ JWT_SECRET: BENCH_JWT_SECRET }), companyId);
    const auth = { authorization: `Bearer ${token}`, "content-type": "application/json" };
    const person = await fetch(`${base}/api/v1/subject/people`, {
      method: "POST",
      headers: auth,
      body: JSON.stringify({
        person: { document_number: "52998224725", document_type: "cpf", social_name: "Bench", fiscal_country: "BRA" },
      }),
    }).then((r) => r.json());
    const personId: string = person.data.id;
    const wrkDir = new URL("./wrk/", import.meta.url).pathname;
    const env = { TOKEN: token, PERSON_ID: personId };
    const payins = () =>
      load({
        url: base,
        connections: CONNECTIONS,
        seconds: SECONDS,
        script: `${wrkDir}payin.lua`,
        env,
        request: () =>
          new Request(`${base}/api/sandbox/payins`, {
            method: "POST",
            headers: auth,
            body: JSON.stringify({ subject_id: personId, value: "1.00", currency: "BRL" }),
          }),
      });
    const values = () =>
      load({
        url: base,
        connections: CONNECTIONS,
        seconds: Math.max(3, SECONDS / 2),
        script: `${wrkDir}transaction_values.lua`,
        env,
        request: () => new Request(`${base}/api/v1/subject/${personId}/transaction_values`, { headers: auth }),
      });

    const fresh = await payins();
    const valuesFresh = await values();
    const [{ n: before }] = await sql<{ n: number }[]>`select count(*)::int as n from transactions`;

    const seeding = performance.now();
    // 1.00 BRL each (0.18 USD): 100,000 of them stay under the yearly limit, so every pay-in is judged in full
    await sql`
      with made as (
        insert into transactions (id, company_id, subject_id, kind, status, currency, value, usd_value, cleared,
                                  inserted_at, updated_at)
        select gen_random_uuid(), ${companyId}, ${personId}, 'payin', 'identified', 'BRL', 1.00, 0.18, true, t, t
        from (select now() - random() * (now() - date_trunc('year', now())) as t
              from generate_series(1, ${HISTORY})) as times
        returning id, inserted_at
      )
      insert into events (id, company_id, type, data, inserted_at)
      select gen_random_uuid(), ${companyId}, 'identified', json_build_object('transaction_id', id), inserted_at
      from made`;
    await sql`vacuum analyze transactions`;
    const seedSeconds = (performance.now() - seeding) / 1000;

    const aged = await payins();
    const valuesAged = await values();
    const line = (name: string, r: LoadResult) =>
      console.log(
        `${name.padEnd(40)} ${r.requestsPerSecond.toFixed(0).padStart(7)} req/s   p50 ${r.p50Ms.toFixed(2)} ms   p99 ${
          r.p99Ms.toFixed(2)
        } ms   errors ${r.errors}`,
      );
    console.log(`\nMoney against history, ${CONNECTIONS} connections on one subject (${fresh.tool})`);
    line(`pay-ins, ${before} transactions before`, fresh);
    line(`pay-ins, +${HISTORY} this year`, aged);
    line("transaction_values, small history", valuesFresh);
    line(`transaction_values, +${HISTORY}`, valuesAged);
    return {
      volume_history_seeded: HISTORY,
      volume_seed_s: round(seedSeconds),
      volume_payins_fresh_rps: round(fresh.requestsPerSecond, 0),
      volume_payins_aged_rps: round(aged.requestsPerSecond, 0),
      volume_payins_aged_vs_fresh: round(aged.requestsPerSecond / fresh.requestsPerSecond, 2),
      volume_payins_errors: fresh.errors + aged.errors,
      volume_values_fresh_p50_ms: round(valuesFresh.p50Ms, 2),
      volume_values_aged_p50_ms: round(valuesAged.p50Ms, 2),
      volume_values_aged_p99_ms: round(valuesAged.p99Ms, 2),
    };
  } finally {
    await sql.end();
    child.kill("SIGTERM");
    await child.status;
    await dropDatabase(url);
  }
}
