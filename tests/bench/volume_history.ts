/**
 * The events list against history (`BENCH_ONLY=volume`): every filter's p50 and p99 with 10,000 delivery records
 * and with 1,000,000 (events and records seeded with set-based SQL, as the service writes them: one record per
 * event, 1% failed, two endpoints, five types), and the ratio. Calls the domain's list query directly, so the figure
 * is the database's part of a page. Measures only.
 */
import { connect, type Sql } from "../../domain/infra/db.ts";
import { migrate } from "../../domain/infra/migrate.ts";
import { type EventsFilter, listDeliveries } from "../../domain/webhooks/endpoints/deliveries.ts";
import { dropDatabase, freshDatabase } from "../support/helpers.ts";
import { type Figures, round } from "./figures.ts";
import { A_MONTH, partitionPastDays } from "./partitions.ts";

const SMALL = 10_000;
const LARGE = Number(Deno.env.get("BENCH_HISTORY_ROWS") ?? 1_000_000);
// A p99 of 1,000 pages is their 10th slowest, which one pause of the machine decides; of 3,000, the 30th.
const RUNS = Number(Deno.env.get("BENCH_HISTORY_RUNS") ?? 3000);
const WARM_UP = Math.ceil(RUNS / 10);

const COMPANY = "11111111-1111-4111-8111-111111111111";
const ENDPOINTS = ["22222222-2222-4222-8222-222222222221", "22222222-2222-4222-8222-222222222222"];
const TYPES = ["identified", "wire_created", "exchange_created", "payment_approved", "subject_approved"];

/** Events and their delivery records, `count` of them, two seconds apart, ending now. */
async function seed(sql: Sql, count: number) {
  await sql`
    with ev as (
      insert into events (id, company_id, type, data, inserted_at)
      select uuid_v7(), ${COMPANY}, (${TYPES}::text[])[1 + (i % 5)], json_build_object('transaction_id', gen_random_uuid()),
             now() - make_interval(secs => (${count}::int - i) * 2)
      from generate_series(1, ${count}::int) as i
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

type Timings = Record<string, { p50: number; p99: number }>;

/**
 * A database of its own holding `count` records of one company in a month of daily partitions, seeded, vacuumed and
 * checkpointed.
 */
async function historyOf(name: string, count: number) {
  const url = await freshDatabase(name);
  const sql = connect(url, { max: 2 });
  await migrate(sql, url);
  await partitionPastDays(sql, A_MONTH); // the large history spans 23 days of it
  await sql`insert into companies (id) values (${COMPANY})`;
  for (const id of ENDPOINTS) {
    await sql`insert into webhook_endpoints (id, company_id, url, sealed_secret)
              values (${id}, ${COMPANY}, 'http://127.0.0.1:9/bench', 'unused')`;
  }
  await seed(sql, count);
  return { url, sql };
}

/**
 * Every filter's p50 and p99 over RUNS pages at each size. The sizes live in two databases and are timed in the same
 * rounds, filter by filter and in alternating order, so that a pause of the machine (a checkpoint, another process,
 * a collection in this one) falls on both sizes alike instead of on whichever phase happened to be running.
 */
async function timeFilters(sizes: Sql[]): Promise<Timings[]> {
  const all = Object.entries(filters());
  const times = sizes.map(() => new Map(all.map(([name]) => [name, [] as number[]])));
  const order = sizes.map((_, i) => i);
  for (let round = 0; round < WARM_UP + RUNS; round++) {
    for (const [name, f] of all) {
      for (const i of round % 2 ? order.toReversed() : order) {
        const t = performance.now();
        await listDeliveries(sizes[i], COMPANY, { per_page: 20, ...f } as EventsFilter);
        if (round >= WARM_UP) times[i].get(name)!.push(performance.now() - t);
      }
    }
  }
  return times.map((byName) => {
    const out: Timings = {};
    for (const [name, list] of byName) {
      list.sort((a, b) => a - b);
      out[name] = { p50: list[Math.floor(RUNS / 2)], p99: list[Math.ceil(RUNS * 0.99) - 1] };
    }
    return out;
  });
}

export async function benchVolumeHistory(): Promise<Figures> {
  const small = await historyOf("bench_history_small", SMALL);
  const seeding = performance.now();
  const large = await historyOf("bench_history_large", LARGE);
  const seedSeconds = (performance.now() - seeding) / 1000;
  try {
    const [atSmall, atLarge] = await timeFilters([small.sql, large.sql]);
    console.log(`\nEvents list, p50 / p99 of ${RUNS} pages of 20 (ms): ${SMALL} records, then ${LARGE}`);
    const figures: Figures = { history_rows: LARGE, history_seed_s: round(seedSeconds, 1) };
    let worst = 0;
    for (const name of Object.keys(atSmall)) {
      const ratio = atLarge[name].p99 / atSmall[name].p99;
      worst = Math.max(worst, ratio);
      console.log(
        `${name.padEnd(32)} ${atSmall[name].p50.toFixed(2).padStart(7)} / ${
          atSmall[name].p99.toFixed(2).padStart(7)
        }   ${atLarge[name].p50.toFixed(2).padStart(7)} / ${atLarge[name].p99.toFixed(2).padStart(7)}   x${
          ratio.toFixed(2)
        }`,
      );
      figures[`events_list_${name}_p99_ms`] = round(atLarge[name].p99, 2);
      figures[`events_list_${name}_p99_ratio`] = round(ratio, 2);
    }
    figures.events_list_worst_p99_ratio = round(worst, 2);
    return figures;
  } finally {
    for (const { sql, url } of [small, large]) {
      await sql.end();
      await dropDatabase(url);
    }
  }
}
