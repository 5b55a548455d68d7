/**
 * Shapes a bench's database as a month-old service's: one history partition per past day. Kept apart so every bench
 * that reads or delivers measures against the same partitions.
 */
import type { Sql } from "../../domain/infra/db.ts";

/** The days of partitions a service at the default 30-day retention has. */
export const A_MONTH = 30;

/**
 * A freshly migrated database shaped as if the service had partitioned its history `days` days ago: the (empty)
 * catch-all partitions give way to one partition per table per past day, as a service running at the default
 * 30-day retention has. Benchmarks of reads and deliveries run against this, not against the five partitions of a
 * new database: a statement the planner cannot prune pays for every partition (docs/webhooks.md, "The events list
 * and its indexes").
 */
export async function partitionPastDays(sql: Sql, days: number) {
  const catchAll = await sql<{ name: string }[]>`
    select c.relname as name from pg_class c join pg_inherits i on i.inhrelid = c.oid
    where c.relkind = 'r' and c.relname like '%\_p\_before\_%'`;
  for (const { name } of catchAll) await sql`drop table ${sql(name)}`;
  await sql`update history_partitioned_since set first_day = current_date - ${days}::int`;
  await sql`
    select create_history_partition(t, d::date)
    from unnest(array['events', 'webhook_attempts']) as t,
         generate_series(current_date - ${days}::int, current_date - 1, interval '1 day') as d`;
}
