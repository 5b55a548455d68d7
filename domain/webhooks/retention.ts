import type { Sql } from "../platform/db.ts";
import { log } from "../platform/log.ts";

/**
 * Retention of the webhook history (docs/webhooks.md, "Retention"): events, delivery records and attempts older than
 * EVENT_RETENTION_DAYS go, except records still pending and their events. Whole days go at once: a day's partition
 * of each history table is detached (without blocking the writers of the other days) and dropped, so no row is
 * deleted one by one and nothing is left for VACUUM. What remains older than the cutoff in a day that cannot go yet
 * (a record still pending, or a retention shorter than a day) is deleted in bounded batches.
 */

export type Pruned = { partitions_dropped: string[]; deliveries: number; attempts: number; events: number };

const TABLES = ["webhook_attempts", "webhook_deliveries", "events"] as const;
const LOCK_KEY = 726_001; // one pruner at a time, whichever instance runs it
const BATCH = 5_000;
/** Days of partitions kept ready ahead of today (each run of the migrations and of the pruner tops them up). */
export const DAYS_AHEAD = 14;

/** Creates the history partitions of today and the next `DAYS_AHEAD` days that do not exist yet; answers how many. */
export async function ensurePartitions(sql: Sql): Promise<number> {
  const [{ created }] = await sql<{ created: number }[]>`select ensure_history_partitions(${DAYS_AHEAD}) as created`;
  return created;
}

/** The first instant after the partition named `name` (by the naming of sql/0017_history_partitions.sql). */
function upperBound(name: string): Date | null {
  const m = /_p(_before_)?(\d{4})(\d{2})(\d{2})$/.exec(name);
  if (!m) return null;
  const day = Date.UTC(Number(m[2]), Number(m[3]) - 1, Number(m[4]));
  return new Date(m[1] ? day : day + 86_400_000);
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
  const pruned: Pruned = { partitions_dropped: [], deliveries: 0, attempts: 0, events: 0 };
  const conn = await sql.reserve();
  try {
    const [{ locked }] = await conn<{ locked: boolean }[]>`select pg_try_advisory_lock(${LOCK_KEY}) as locked`;
    if (!locked) return pruned;
    try {
      await ensurePartitions(conn);
      const days = await conn<{ name: string }[]>`
        select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid
        where i.inhparent = 'webhook_deliveries'::regclass order by c.relname`;
      for (const { name } of days) {
        const upper = upperBound(name);
        if (!upper || upper > cutoff) continue;
        const [pending] = await conn`select 1 from ${conn(name)} where status = 'pending' limit 1`;
        if (pending) continue; // its old rows go in batches below; the day goes once they are done
        const suffix = name.slice("webhook_deliveries".length);
        for (const table of TABLES) {
          const child = `${table}${suffix}`;
          const [exists] = await conn`select to_regclass(${child}) is not null as exists`;
          if (!exists.exists) continue;
          // concurrently: the table's other days keep taking writes meanwhile (it runs outside a transaction)
          await conn.unsafe(`alter table ${table} detach partition ${child} concurrently`);
          await conn.unsafe(`drop table ${child}`);
          pruned.partitions_dropped.push(child);
        }
      }
      pruned.deliveries = await inBatches(() =>
        conn`delete from webhook_deliveries where (id, inserted_at) in (
               select id, inserted_at from webhook_deliveries
               where inserted_at < ${cutoff} and status <> 'pending' limit ${batch})`, batch);
      pruned.attempts = await inBatches(() =>
        conn`delete from webhook_attempts where (id, inserted_at) in (
               select a.id, a.inserted_at from webhook_attempts a
               where a.inserted_at < ${cutoff}
                 and not exists (select 1 from webhook_deliveries d where d.id = a.delivery_id and d.status = 'pending')
               limit ${batch})`, batch);
      pruned.events = await inBatches(() =>
        conn`delete from events where (id, inserted_at) in (
               select e.id, e.inserted_at from events e
               where e.inserted_at < ${cutoff}
                 and not exists (select 1 from webhook_deliveries d where d.event_id = e.id and d.status = 'pending')
               limit ${batch})`, batch);
    } finally {
      await conn`select pg_advisory_unlock(${LOCK_KEY})`;
    }
  } finally {
    conn.release();
  }
  if (pruned.partitions_dropped.length || pruned.deliveries || pruned.attempts || pruned.events) {
    log.info("webhook history pruned", { cutoff: cutoff.toISOString(), ...pruned });
  }
  return pruned;
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
