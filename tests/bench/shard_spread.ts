/**
 * How evenly `company_id` would spread over Citus shards (docs/scaling.md, "The shard key, measured"). Seeds a skewed
 * population of companies into a database of its own (a Zipf-like size per company: a few large ones, many small
 * ones) with set-based SQL, as the service writes its rows, then places every row where Citus would: Citus hashes a
 * distribution column with the hash function of its type (for `uuid`, Postgres's `uuid_hash`) and gives each of the
 * `shard_count` shards an equal range of the 32-bit hash space (shard i holds hashes from -2^31 + i * 2^32 / n). No
 * Citus is needed: the hash is Postgres's own, the ranges are arithmetic. Measures only; prints figures for the doc.
 *
 *   deno run -A tests/bench/shard_spread.ts
 *
 * SPREAD_COMPANIES (2000), SPREAD_PEOPLE (100000 in all), SPREAD_ZIPF (1.0, the exponent of the size by rank),
 * SPREAD_SHARDS (32, Citus's default shard_count), SPREAD_NODES (4 workers, shards placed round-robin as Citus does at
 * creation), SPREAD_KEEP=1 keeps the database.
 */
import { connect, type Sql } from "../../domain/infra/db.ts";
import { setLogLevel } from "../../domain/basics/log.ts";
import { migrate } from "../../domain/infra/migrate.ts";
import { dropDatabase, freshDatabase } from "../support/helpers.ts";

const COMPANIES = Number(Deno.env.get("SPREAD_COMPANIES") ?? 2000);
const PEOPLE = Number(Deno.env.get("SPREAD_PEOPLE") ?? 100_000);
const ZIPF = Number(Deno.env.get("SPREAD_ZIPF") ?? 1.0);
const SHARDS = Number(Deno.env.get("SPREAD_SHARDS") ?? 32);
const NODES = Number(Deno.env.get("SPREAD_NODES") ?? 4);
const KEEP = Deno.env.get("SPREAD_KEEP") === "1";

/** Per company: its rank by size, the shard its hash falls in, and its rows and bytes over every tenant table. */
type Company = { id: string; rank: number; shard: number; rows: Map<string, number>; bytes: number };

/** The shard of a hash as Citus splits the hash space: equal ranges, the last one running to 2^31 - 1. */
const shardOf = (sql: Sql, column: string) =>
  sql`least(${SHARDS - 1}, ((uuid_hash(${sql(column)})::bigint + 2147483648) / ${Math.floor(2 ** 32 / SHARDS)}))::int`;

/**
 * The population: each company's number of people is PEOPLE * rank^-ZIPF / H (at least one), and for each person
 * what the service stores: a bank account, four identified pay-ins (each with its `identified` event, one delivery
 * record to the company's endpoint and one attempt) and the running totals the transactions trigger keeps. Creating
 * a company opens its six internal accounts (the trigger of sql/0013).
 */
async function seed(sql: Sql) {
  await sql`
    create table spread_plan as
    select gen_random_uuid() as id, r as rank,
           greatest(1, round(${PEOPLE} * power(r, -${ZIPF}::float8) / h))::int as people
    from generate_series(1, ${COMPANIES}::int) r,
         (select sum(power(k, -${ZIPF}::float8)) as h from generate_series(1, ${COMPANIES}::int) k) z`;
  await sql`insert into companies (id) select id from spread_plan`;
  await sql`
    insert into webhook_endpoints (id, company_id, url, sealed_secret)
    select uuid_v7(), id, 'http://127.0.0.1:9/spread', 'unused' from spread_plan`;
  await sql`
    insert into people (id, company_id, document_type, document_number, social_name, fiscal_country)
    select uuid_v7(), c.id, 'cpf', lpad(i::text, 11, '0'), 'Spread', 'BRA'
    from spread_plan c cross join lateral generate_series(1, c.people) i`;
  await sql`
    insert into bank_accounts (id, company_id, subject_id, country, currency, account_type, account_number,
                               branch_number)
    select uuid_v7(), company_id, id, 'BRA', 'BRL', 'conta-corrente', '12345-6', '0001' from people`;
  await sql`
    with made as (
      insert into transactions (id, company_id, subject_id, kind, status, currency, value, usd_value, cleared)
      select uuid_v7(), p.company_id, p.id, 'payin', 'identified', 'BRL', 1.00, 0.18, true
      from people p cross join generate_series(1, 4)
      returning id, company_id, inserted_at
    )
    insert into events (id, company_id, type, data, inserted_at)
    select uuid_v7(), company_id, 'identified', json_build_object('transaction_id', id), inserted_at from made`;
  await sql`
    with d as (
      insert into webhook_deliveries (id, company_id, event_id, endpoint_id, type, status, attempts,
                                      schedule_attempts, inserted_at, updated_at)
      select uuid_v7(), e.company_id, e.id, w.id, e.type, 'succeeded', 1, 1, e.inserted_at, e.inserted_at
      from events e join webhook_endpoints w on w.company_id = e.company_id
      returning id, company_id, inserted_at
    )
    insert into webhook_attempts (id, delivery_id, company_id, attempt_number, http_status, response_body, duration_ms,
                                  inserted_at)
    select uuid_v7(), id, company_id, 1, 200, 'ok', 12, inserted_at from d`;
}

/** Every table of the public schema with a `company_id` column (and `companies` by its `id`), with rows. */
async function tenantTables(sql: Sql): Promise<{ table: string; column: string }[]> {
  const rows = await sql<{ table: string }[]>`
    select c.table_name as table from information_schema.columns c
    join information_schema.tables t on t.table_schema = c.table_schema and t.table_name = c.table_name
    where c.table_schema = 'public' and c.column_name = 'company_id' and t.table_type = 'BASE TABLE'
      and not exists (select 1 from pg_inherits i where i.inhrelid = format('%I', c.table_name)::regclass)
    order by 1`;
  return [{ table: "companies", column: "id" }, ...rows.map((r) => ({ table: r.table, column: "company_id" }))];
}

async function measure(sql: Sql): Promise<Map<string, Company>> {
  const companies = new Map<string, Company>();
  for (
    const c of await sql<{ id: string; rank: number; shard: number }[]>`
    select id, rank, ${shardOf(sql, "id")} as shard from spread_plan`
  ) {
    companies.set(c.id, { ...c, rows: new Map(), bytes: 0 });
  }
  for (const { table, column } of await tenantTables(sql)) {
    if (table === "spread_plan") continue;
    const counts = await sql<{ company: string; n: number; bytes: string }[]>`
      select ${sql(column)} as company, count(*)::int as n, sum(pg_column_size(t.*))::bigint as bytes
      from ${sql(table)} t group by 1`;
    for (const r of counts) {
      const c = companies.get(r.company);
      if (!c) continue; // a company the seed did not make (none expected)
      c.rows.set(table, r.n);
      c.bytes += Number(r.bytes);
    }
  }
  return companies;
}

const total = (c: Company) => [...c.rows.values()].reduce((s, n) => s + n, 0);

/** min, median, max, mean and max/mean of per-bucket sums (every bucket counted, empty ones as 0). */
function spread(values: number[]) {
  const sorted = values.toSorted((a, b) => a - b);
  const mean = sorted.reduce((s, v) => s + v, 0) / sorted.length;
  const median = sorted.length % 2
    ? sorted[(sorted.length - 1) / 2]
    : (sorted[sorted.length / 2 - 1] + sorted[sorted.length / 2]) / 2;
  return { min: sorted[0], median, max: sorted.at(-1)!, mean, maxOverMean: sorted.at(-1)! / mean };
}

function perShard(companies: Company[], value: (c: Company) => number, buckets = SHARDS, of = (c: Company) => c.shard) {
  const sums = new Array(buckets).fill(0);
  for (const c of companies) sums[of(c)] += value(c);
  return sums;
}

const fmt = (n: number) => n.toLocaleString("en-US", { maximumFractionDigits: 1 });

function line(name: string, values: number[]) {
  const s = spread(values);
  console.log(
    `${name.padEnd(36)} min ${fmt(s.min).padStart(11)}  median ${fmt(s.median).padStart(11)}  max ${
      fmt(s.max).padStart(11)
    }  max/mean ${s.maxOverMean.toFixed(2)}`,
  );
  return s;
}

if (import.meta.main) {
  setLogLevel("silent");
  const url = await freshDatabase("bench_shard_spread");
  const sql = connect(url, { max: 2 });
  try {
    await migrate(sql, url);
    const started = performance.now();
    await seed(sql);
    const seedSeconds = (performance.now() - started) / 1000;
    const byId = await measure(sql);
    const all = [...byId.values()];
    const tables = [...new Set(all.flatMap((c) => [...c.rows.keys()]))].sort();
    const rowsAll = all.reduce((s, c) => s + total(c), 0);
    const bytesAll = all.reduce((s, c) => s + c.bytes, 0);

    console.log(
      `${new Date().toISOString()} ${Deno.build.os} ${navigator.hardwareConcurrency} cores; ${COMPANIES} companies, ` +
        `${PEOPLE} people in all, sizes ~ rank^-${ZIPF}; ${rowsAll.toLocaleString("en-US")} rows ` +
        `(${(bytesAll / 2 ** 20).toFixed(0)} MiB of tuples) seeded in ${seedSeconds.toFixed(1)} s; ` +
        `${SHARDS} shards by uuid_hash(company_id)`,
    );
    console.log("\nPer shard:");
    line("companies", perShard(all, () => 1));
    for (const table of tables) line(`rows of ${table}`, perShard(all, (c) => c.rows.get(table) ?? 0));
    const rowsSpread = line("rows, every tenant table", perShard(all, total));
    const bytesSpread = line("bytes (tuples), every tenant table", perShard(all, (c) => c.bytes));

    const bySize = all.toSorted((a, b) => total(b) - total(a));
    const biggest = bySize[0];
    const meanShardRows = rowsAll / SHARDS;
    console.log("\nThe largest companies:");
    for (const c of bySize.slice(0, 5)) {
      console.log(
        `rank ${String(c.rank).padStart(4)}  shard ${String(c.shard).padStart(2)}  ${
          total(c).toLocaleString("en-US").padStart(9)
        } rows  ${(100 * total(c) / rowsAll).toFixed(1).padStart(5)}% of all  ${
          (total(c) / meanShardRows).toFixed(2)
        } x the mean shard`,
      );
    }
    const medianCompany = spread(all.map(total)).median;
    console.log(`median company: ${fmt(medianCompany)} rows`);

    console.log("\nWith the largest companies each on a shard of their own (isolate_tenant_to_new_shard):");
    for (const k of [1, 3, 10]) {
      const isolated = new Set(bySize.slice(0, k).map((c) => c.id));
      const rest = all.filter((c) => !isolated.has(c.id));
      const s = spread(perShard(rest, total));
      console.log(
        `top ${String(k).padStart(2)} isolated: the other shards' rows max/mean ${s.maxOverMean.toFixed(2)}, ` +
          `max ${fmt(s.max)}; the largest isolated shard ${(total(bySize[0]) / s.mean).toFixed(2)} x the others' mean`,
      );
    }

    console.log(`\nPer node, ${NODES} workers, shard i on node i mod ${NODES} (Citus's placement at creation):`);
    const nodeOf = (c: Company) => c.shard % NODES;
    const nodeRows = line("rows, every tenant table", perShard(all, total, NODES, nodeOf));
    // what a rebalance by size can reach: the largest shard first, each onto the node holding least so far
    const shardRows = perShard(all, total);
    const nodeLoad = new Array(NODES).fill(0);
    for (const rows of shardRows.toSorted((a, b) => b - a)) nodeLoad[nodeLoad.indexOf(Math.min(...nodeLoad))] += rows;
    const balanced = line("rows, shards placed by size", nodeLoad);
    console.log(
      `the largest company is ${(100 * total(biggest) / (rowsAll / NODES)).toFixed(0)}% of a mean node's rows`,
    );

    // company ids made as UUIDv7 (time-ordered, as the service makes its own ids) instead of random v4
    const v7 = await sql<{ shard: number; n: number }[]>`
      select ${shardOf(sql, "id")} as shard, count(*)::int as n
      from (select uuid_v7() as id from generate_series(1, ${COMPANIES}::int)) ids group by 1`;
    const v7Counts = new Array(SHARDS).fill(0);
    for (const r of v7) v7Counts[r.shard] = r.n;
    console.log("");
    line("companies, ids as UUIDv7", v7Counts);

    console.log("\nFigures:");
    for (
      const [name, value] of Object.entries({
        spread_companies: COMPANIES,
        spread_rows: rowsAll,
        spread_seed_s: Math.round(seedSeconds * 10) / 10,
        spread_rows_per_shard_max_over_mean: rowsSpread.maxOverMean,
        spread_bytes_per_shard_max_over_mean: bytesSpread.maxOverMean,
        spread_rows_per_node_max_over_mean: nodeRows.maxOverMean,
        spread_rows_per_node_by_size_max_over_mean: balanced.maxOverMean,
        spread_largest_company_pct: (100 * total(biggest)) / rowsAll,
        spread_largest_company_vs_mean_shard: total(biggest) / meanShardRows,
      })
    ) console.log(`${name.padEnd(44)} ${Math.round(value * 100) / 100}`);
  } finally {
    await sql.end();
    if (KEEP) console.log(`kept ${url}`);
    else await dropDatabase(url);
  }
}
