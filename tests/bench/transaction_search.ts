/**
 * Search by event or transaction id (`BENCH_ONLY=search`): on one company with 30,000 events and their delivery records
 * (seeded with set-based SQL as the service writes them, two seconds apart, ending now), the p50 and p99 of a page of
 * the events list by `transaction_id` (a transaction named by the first of those events, then by the last), by
 * `event_id` and with no filter, beside each other; and what writing which events name which transaction
 * (sql/0045) costs an emit, with its trigger and without. Calls the domain directly, so the figures are the database's
 * part. Measures only.
 */
import { connect, type Sql } from "../../domain/infra/db.ts";
import { migrate } from "../../domain/infra/migrate.ts";
import { type EventsFilter, listDeliveries } from "../../domain/webhooks/endpoints/deliveries.ts";
import { emitEvent } from "../../domain/webhooks/outbox/events.ts";
import { newId } from "../../domain/basics/ids.ts";
import { setLogLevel } from "../../domain/basics/log.ts";
import { dropDatabase, freshDatabase } from "../support/helpers.ts";
import { type Figures, round } from "./figures.ts";
import { partitionPastDays } from "./partitions.ts";

const EVENTS = Number(Deno.env.get("BENCH_SEARCH_EVENTS") ?? 30_000);
const RUNS = Number(Deno.env.get("BENCH_SEARCH_RUNS") ?? 1000);
const WARM_UP = Math.ceil(RUNS / 10);
const EMITS = Number(Deno.env.get("BENCH_SEARCH_EMITS") ?? 2000);

const COMPANY = "11111111-1111-4111-8111-111111111111";
const ENDPOINT = "22222222-2222-4222-8222-222222222221";

/**
 * `count` events of the company, each naming a transaction made the instant it was, with one record each; ids are
 * UUIDv7 of their instants, as the service's are. Answers the first and the last event's ids and transactions.
 */
async function seed(sql: Sql, count: number) {
  // a UUIDv7 of the instant t.at: its 48 bits of milliseconds, the version, then random bits
  const rows = await sql<{ id: string; transaction_id: string }[]>`
    with ev as (
      insert into events (id, company_id, type, data, inserted_at)
      select (t.ms || '7' || substr(t.r1, 14))::uuid, ${COMPANY}, 'identified',
             jsonb_build_object('transaction_id', (t.ms || '7' || substr(t.r2, 14))::uuid), t.at
      from (select at, lpad(to_hex((extract(epoch from at) * 1000)::bigint), 12, '0') as ms,
                   replace(gen_random_uuid()::text, '-', '') as r1, replace(gen_random_uuid()::text, '-', '') as r2
            from (select now() - make_interval(secs => (${count}::int - i) * 2) as at
                  from generate_series(1, ${count}::int) as i) s) t
      returning id, data->>'transaction_id' as transaction_id, inserted_at
    ), rec as (
      insert into webhook_deliveries (id, company_id, event_id, endpoint_id, type, status, attempts, schedule_attempts,
                                      inserted_at, updated_at)
      select uuid_v7(), ${COMPANY}, id, ${ENDPOINT}, 'identified', 'succeeded', 1, 1, inserted_at, inserted_at from ev
    )
    select id, transaction_id from ev order by inserted_at`;
  for (const table of ["events", "webhook_deliveries"]) await sql`vacuum analyze ${sql(table)}`;
  await sql`checkpoint`.catch(() => {});
  return { first: rows[0], last: rows[rows.length - 1] };
}

/** p50 and p99 (ms) of RUNS pages of 20 with each filter, the filters taken in turn so a pause falls on all alike. */
async function timePages(sql: Sql, filters: Record<string, Partial<EventsFilter>>) {
  const times = new Map(Object.keys(filters).map((name) => [name, [] as number[]]));
  for (let i = 0; i < WARM_UP + RUNS; i++) {
    for (const [name, f] of Object.entries(filters)) {
      const t = performance.now();
      await listDeliveries(sql, COMPANY, { per_page: 20, ...f } as EventsFilter);
      if (i >= WARM_UP) times.get(name)!.push(performance.now() - t);
    }
  }
  return new Map([...times].map(([name, list]) => {
    list.sort((a, b) => a - b);
    return [name, { p50: list[Math.floor(RUNS / 2)], p99: list[Math.ceil(RUNS * 0.99) - 1] }];
  }));
}

/**
 * The median ms of one emit (an `identified` event to one endpoint, in a transaction of its own) with the lookup's
 * trigger (sql/0045) and without it, in the same database, in alternating batches of 100 so that a pause of the machine
 * falls on both alike. Where there is no trigger (a release without it) both are the same emits.
 */
async function timeEmits(sql: Sql, trigger: boolean): Promise<{ with: number; without: number }> {
  const times = { with: [] as number[], without: [] as number[] };
  for (let batch = 0; batch < Math.ceil(EMITS / 100); batch++) {
    for (const side of batch % 2 ? ["without", "with"] as const : ["with", "without"] as const) {
      if (trigger) {
        await sql.unsafe(
          `alter table events ${side === "with" ? "enable" : "disable"} trigger events_record_transactions`,
        );
      }
      for (let i = 0; i < 100; i++) {
        const t = performance.now();
        await sql.begin((tx) => emitEvent(tx, COMPANY, "identified", { transaction_id: newId() }));
        times[side].push(performance.now() - t);
      }
    }
  }
  if (trigger) await sql`alter table events enable trigger events_record_transactions`;
  const median = (list: number[]) => list.sort((a, b) => a - b)[Math.floor(list.length / 2)];
  return { with: median(times.with), without: median(times.without) };
}

async function companyDatabase(name: string) {
  const url = await freshDatabase(name);
  const sql = connect(url, { max: 2 });
  await migrate(sql, url);
  await partitionPastDays(sql, 2); // 30,000 events two seconds apart span yesterday and today
  await sql`insert into companies (id) values (${COMPANY})`;
  await sql`insert into webhook_endpoints (id, company_id, url, sealed_secret)
            values (${ENDPOINT}, ${COMPANY}, 'http://127.0.0.1:9/bench', 'unused')`;
  return { url, sql };
}

export async function benchTransactionSearch(): Promise<Figures> {
  setLogLevel("silent");
  const { url, sql } = await companyDatabase("bench_transaction_search");
  try {
    const { first, last } = await seed(sql, EVENTS);
    // the lookup (sql/0045) older than the history, as once the retention has passed since the upgrade that made it
    // (a release without it has none: the same figures then time its read of the events)
    const [{ lookup }] = await sql`select to_regclass('event_transactions_since') is not null as lookup`;
    const lookupSince = (at: string) => sql`update event_transactions_since set since = ${at}::text::timestamptz`;
    if (lookup) await lookupSince("-infinity");
    const filters: Record<string, Partial<EventsFilter>> = {
      list: {},
      transaction_first: { transaction_id: first.transaction_id },
      transaction_last: { transaction_id: last.transaction_id },
      transaction_unknown: { transaction_id: newId() },
      event_first: { event_id: first.id },
    };
    const figures: Figures = { search_events: EVENTS };
    const note = (timed: Awaited<ReturnType<typeof timePages>>) => {
      for (const [name, { p50, p99 }] of timed) {
        figures[`search_${name}_p50_ms`] = round(p50, 2);
        figures[`search_${name}_p99_ms`] = round(p99, 2);
      }
    };
    note(await timePages(sql, filters));
    if (lookup) {
      // the history written before the lookup, as in the retention after the upgrade: the events are read as before
      await lookupSince("now");
      note(await timePages(sql, { transaction_first_before_lookup: filters.transaction_first }));
    }
    const emits = await timeEmits(sql, lookup);
    figures.search_emit_p50_ms = round(emits.with, 3);
    figures.search_emit_without_lookup_p50_ms = round(emits.without, 3);
    return figures;
  } finally {
    await sql.end({ timeout: 2 });
    await dropDatabase(url);
  }
}
