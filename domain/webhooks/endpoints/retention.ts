/**
 * Retention of the webhook history (docs/webhooks.md, "Retention"): what is older than EVENT_RETENTION_DAYS goes,
 * except records still pending, with their events and attempts.
 *
 * - Delivery records, the queue every drain reads, are deleted in bounded batches (each its own short transaction)
 *   the moment they pass the retention: the API stops showing a record, its event and its attempts at once.
 * - Events and attempts, the two append-only logs, go a whole day at a time once all of the day is past the
 *   retention and no pending record needs it: that day's partition is detached (without blocking the writers and
 *   readers of the other days) and dropped, so none of their rows is deleted one by one and nothing is left for
 *   VACUUM. Until then, at most a day longer, they are unreachable: every read goes through a record.
 * - Which events name which transaction (`event_transactions`, sql/0045) goes with the events: its rows of the days
 *   before the first day of events kept, in bounded batches.
 */

import type { Sql } from "../../infra/db.ts";
import { log } from "../../basics/log.ts";
import { rollUpStats } from "./stats.ts";

/**
 * `stats_rows`: the endpoints' minutes and hours of health (sql/0027, sql/0032) past the retention, deleted in
 * batches like the records. `transaction_rows`: rows of `event_transactions` whose events are gone.
 */
export type Pruned = { deliveries: number; partitions_dropped: string[]; stats_rows: number; transaction_rows: number };

const LOGS = ["events", "webhook_attempts"] as const;
const LOCK_KEY = 726_001; // one pruner at a time, whichever instance runs it
const BATCH = 5_000;
/** Days of partitions kept ready ahead of today (each start and each run of the pruner tops them up). */
export const DAYS_AHEAD = 3;

/** Creates the history partitions of today and the next `DAYS_AHEAD` days that do not exist yet; answers how many. */
export async function ensurePartitions(sql: Sql): Promise<number> {
  const [{ created }] = await sql<{ created: number }[]>`select ensure_history_partitions(${DAYS_AHEAD}) as created`;
  return created;
}

/** The day a partition named `name` covers, as [from, to) (by the naming of sql/0017_history_partitions.sql). */
function bounds(name: string): { from: Date | null; to: Date } | null {
  const m = /_p(_before_)?(\d{4})(\d{2})(\d{2})$/.exec(name);
  if (!m) return null;
  const day = Date.UTC(Number(m[2]), Number(m[3]) - 1, Number(m[4]));
  return m[1] ? { from: null, to: new Date(day) } : { from: new Date(day), to: new Date(day + 86_400_000) };
}

/**
 * Removes the history older than `retentionDays` (as of `now`); answers what went. Runs on one dedicated connection
 * holding an advisory lock, so two instances never prune at once (the second answers at once with nothing done).
 */
export async function pruneHistory(
  sql: Sql,
  opts: { retentionDays: number; now?: Date; batch?: number },
): Promise<Pruned> {
  const cutoff = new Date((opts.now ?? new Date()).getTime() - opts.retentionDays * 86_400_000);
  const batch = opts.batch ?? BATCH;
  const pruned: Pruned = { deliveries: 0, partitions_dropped: [], stats_rows: 0, transaction_rows: 0 };
  let rolling = false;
  const conn = await sql.reserve();
  try {
    const [{ locked }] = await conn<{ locked: boolean }[]>`select pg_try_advisory_lock(${LOCK_KEY}) as locked`;
    if (!locked) return pruned;
    rolling = true;
    try {
      await ensurePartitions(conn);
      pruned.deliveries = await inBatches(() =>
        conn`delete from webhook_deliveries where id in (
               select id from webhook_deliveries where inserted_at < ${cutoff} and status <> 'pending'
               order by inserted_at limit ${batch})`, batch);
      pruned.stats_rows = await inBatches(() =>
        conn`delete from webhook_endpoint_stats where (endpoint_id, bucket) in (
               select endpoint_id, bucket from webhook_endpoint_stats where bucket < ${cutoff}
               order by bucket limit ${batch})`, batch);
      pruned.stats_rows += await inBatches(
        () =>
          conn`delete from webhook_endpoint_stats_hourly where (endpoint_id, bucket) in (
               select endpoint_id, bucket from webhook_endpoint_stats_hourly where bucket < ${cutoff}
               order by bucket limit ${batch})`,
        batch,
      );
      // a batch's list of records goes with them (docs/webhooks.md, "Batches")
      await inBatches(
        () =>
          conn`delete from webhook_batches where id in (
               select id from webhook_batches where inserted_at < ${cutoff} order by inserted_at limit ${batch})`,
        batch,
      );
      // a disabled period that ended before the cutoff holds nothing a replay could still send (replay.ts)
      await conn`delete from webhook_endpoint_disabled_periods where disabled_until < ${cutoff}`;
      for (const table of LOGS) {
        for (const name of await partitionsOf(conn, table)) {
          const day = bounds(name);
          if (!day || day.to > cutoff) continue;
          if (await holdsPending(conn, table, name, day)) continue; // it goes once the record is over
          // concurrently: the table's other days keep taking writes meanwhile (it runs outside a transaction)
          await conn.unsafe(`alter table ${table} detach partition ${name} concurrently`);
          await conn.unsafe(`drop table ${name}`);
          pruned.partitions_dropped.push(name);
        }
      }
      const keptFrom = await eventsKeptFrom(conn);
      if (keptFrom) {
        pruned.transaction_rows = await inBatches(() =>
          conn`delete from event_transactions where ctid = any(array(
                 select ctid from event_transactions where inserted_at < ${keptFrom} limit ${batch}))`, batch);
      }
    } finally {
      await conn`select pg_advisory_unlock(${LOCK_KEY})`;
    }
  } finally {
    conn.release();
  }
  // What is left of the minutes, past a day, into hours: a month's stats read sums hours (endpoint_stats.ts). With
  // the connection given back: `deno task prune` runs on a pool of one. Its own lock keeps two runs apart.
  if (rolling) {
    const hours = await rollUpStats(sql);
    if (hours) log.info("endpoint stats rolled into hours", { hours });
  }
  if (pruned.partitions_dropped.length || pruned.deliveries || pruned.stats_rows) {
    log.info("webhook history pruned", { cutoff: cutoff.toISOString(), ...pruned });
  }
  return pruned;
}

/** The day partitions of `table`, by name. */
async function partitionsOf(sql: Sql, table: typeof LOGS[number]): Promise<string[]> {
  const days = await sql<{ name: string }[]>`
    select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid
    where i.inhparent = ${table}::regclass and c.relkind = 'r' order by c.relname`;
  return days.map((d) => d.name);
}

/**
 * The first instant the events kept cover: the start of their oldest day. Null when there is nothing to go by: a
 * partition that covers all time before a day (sql/0017's first), a name of another form, or no partition at all.
 */
async function eventsKeptFrom(sql: Sql): Promise<Date | null> {
  let first: Date | null = null;
  for (const name of await partitionsOf(sql, "events")) {
    const from = bounds(name)?.from;
    if (!from) return null;
    if (!first || from < first) first = from;
  }
  return first;
}

/**
 * Whether a pending record still needs the day `name` of `table`: its event (written the same instant as the record)
 * or one of its attempts (written at or after it). By then the records older than the cutoff left are pending ones.
 */
async function holdsPending(
  sql: Sql,
  table: typeof LOGS[number],
  name: string,
  day: { from: Date | null; to: Date },
): Promise<boolean> {
  const from = day.from ?? new Date(0);
  const [row] = table === "events"
    ? await sql`select 1 from webhook_deliveries
                where inserted_at >= ${from} and inserted_at < ${day.to} and status = 'pending' limit 1`
    : await sql`select 1 from webhook_deliveries d
                where d.inserted_at < ${day.to} and d.status = 'pending'
                  and exists (select 1 from ${sql(name)} a where a.delivery_id = d.id) limit 1`;
  return row !== undefined;
}

/** Runs `step` (one bounded DELETE, its own transaction) until a run removes fewer rows than a batch. */
async function inBatches(step: () => Promise<{ count: number }>, batch: number): Promise<number> {
  let total = 0;
  for (;;) {
    const { count } = await step();
    total += count;
    if (count < batch) return total;
  }
}
