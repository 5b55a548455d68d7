/**
 * The events list against history (`BENCH_ONLY=volume`): every filter's p50 and p99 with 10,000 delivery records,
 * then with 1,000,000 (events and records seeded with set-based SQL, as the service writes them: one record per
 * event, 1% failed, two endpoints, five types), and the ratio. Calls the domain's list query directly, so the figure
 * is the database's part of a page. Measures only.
 */
import { connect, type Sql } from "../../domain/platform/db.ts";
import { migrate } from "../../domain/platform/migrate.ts";
import { type EventsFilter, listDeliveries } from "../../domain/webhooks/deliveries.ts";
import { dropDatabase, freshDatabase } from "../helpers.ts";
import type { Figures } from "./figures.ts";

const SMALL = 10_000;
const LARGE = Number(Deno.env.get("BENCH_HISTORY_ROWS") ?? 1_000_000);
const RUNS = Number(Deno.env.get("BENCH_HISTORY_RUNS") ?? 1000);
const WARM_UP = Math.ceil(RUNS / 10);
const round = (n: number, places = 2) => Math.round(n * 10 ** places) / 10 ** places;

const COMPANY = "11111111-1111-4111-8111-111111111111";
const ENDPOINTS = ["22222222-2222-4222-8222-222222222221", "22222222-2222-4222-8222-222222222222"];
const TYPES = ["identified", "wire_created", "exchange_created", "payment_approved", "subject_approved"];

/** Events and their delivery records, `count` of them, two seconds apart, ending now. */
async function seed(sql: Sql, from: number, count: number) {
  await sql`
    with ev as (
      insert into events (id, company_id, type, data, inserted_at)
      select uuid_v7(), ${COMPANY}, (${TYPES}::text[])[1 + (i % 5)], json_build_object('transaction_id', gen_random_uuid()),
             now() - make_interval(secs => (${from + count}::int - i) * 2)
      from generate_series(${from + 1}::int, ${from + count}::int) as i
      returning id, type, inserted_at
    )
    insert into webhook_deliveries (id, company_id, event_id, endpoint_id, type, status, attempts, schedule_attempts,
                                    inserted_at, updated_at)
    select uuid_v7(), ${COMPANY}, id, (${ENDPOINTS}::uuid[])[1 + (abs(hashtext(id::text)) % 2)], type,
           case when random() < 0.01 then 'failed' else 'succeeded' end, 1, 1, inserted_at, inserted_at
    from ev`;
  await sql`vacuum analyze events`;
  await sql`vacuum analyze webhook_deliveries`;
  // the bulk load's dirty pages written now, not in the middle of the timing
  await sql`checkpoint`.catch(() => {});
}

function filters(): Record<string, Partial<EventsFilter>> {
  // the last hour: the same records at both sizes (they are seeded two seconds apart, ending now)
  const start = new Date(Date.now() - 3_600_000);
  const end = new Date(Date.now() + 60_000);
  const lastHour = { from: { at: start, end: start }, to: { at: end, end } };
  return {
    none: {},
    type: { type: ["identified"] },
    type_without_rows: { type: ["invoice_paid"] },
    status_failed: { status: "failed" },
    failed_of_a_type_without_rows: { status: "failed", type: ["invoice_paid"] },
    endpoint: { endpoint_id: ENDPOINTS[1] },
    endpoint_failed: { endpoint_id: ENDPOINTS[1], status: "failed" },
    last_hour: lastHour,
    failed_last_hour: { status: "failed", ...lastHour },
    oldest_first: { order_by: "asc" },
  };
}

/**
 * Every filter's p50 and p99 over RUNS pages, the filters taken in turn at each round, so that a pause of the machine
 * (a checkpoint, another process) falls on all of them rather than on the one being timed.
 */
async function timeFilters(sql: Sql) {
  const all = Object.entries(filters());
  const times = new Map(all.map(([name]) => [name, [] as number[]]));
  for (let round = 0; round < WARM_UP + RUNS; round++) {
    for (const [name, f] of all) {
      const t = performance.now();
      await listDeliveries(sql, COMPANY, { per_page: 20, ...f } as EventsFilter);
      if (round >= WARM_UP) times.get(name)!.push(performance.now() - t);
    }
  }
  const out: Record<string, { p50: number; p99: number }> = {};
  for (const [name, list] of times) {
    list.sort((a, b) => a - b);
    out[name] = { p50: list[Math.floor(RUNS / 2)], p99: list[Math.ceil(RUNS * 0.99) - 1] };
  }
  return out;
}

export async function benchVolumeHistory(): Promise<Figures> {
  const url = await freshDatabase("bench_volume_history");
  const sql = connect(url, { max: 2 });
  try {
    await migrate(sql, url);
    await sql`insert into companies (id) values (${COMPANY})`;
    for (const id of ENDPOINTS) {
      await sql`insert into webhook_endpoints (id, company_id, url, sealed_secret)
                values (${id}, ${COMPANY}, 'http://127.0.0.1:9/bench', 'unused')`;
    }
    await seed(sql, 0, SMALL);
    const small = await timeFilters(sql);
    const seeding = performance.now();
    await seed(sql, SMALL, LARGE - SMALL);
    const seedSeconds = (performance.now() - seeding) / 1000;
    const large = await timeFilters(sql);
    console.log(`\nEvents list, p50 / p99 of ${RUNS} pages of 20 (ms): ${SMALL} records, then ${LARGE}`);
    const figures: Figures = { history_rows: LARGE, history_seed_s: round(seedSeconds, 1) };
    let worst = 0;
    for (const name of Object.keys(small)) {
      const ratio = large[name].p99 / small[name].p99;
      worst = Math.max(worst, ratio);
      console.log(
        `${name.padEnd(32)} ${small[name].p50.toFixed(2).padStart(7)} / ${small[name].p99.toFixed(2).padStart(7)}   ${
          large[name].p50.toFixed(2).padStart(7)
        } / ${large[name].p99.toFixed(2).padStart(7)}   x${ratio.toFixed(2)}`,
      );
      figures[`events_list_${name}_p99_ms`] = round(large[name].p99);
      figures[`events_list_${name}_p99_ratio`] = round(ratio);
    }
    figures.events_list_worst_p99_ratio = round(worst);
    return figures;
  } finally {
    await sql.end();
    await dropDatabase(url);
  }
}
