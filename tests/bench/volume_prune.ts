/**
 * Retention against a month and a half of history (`BENCH_ONLY=volume`): the database is shaped as a service
 * partitioned 45 days ago would have it (one partition per table per day), 1,000,000 events older than the 30-day
 * retention are seeded with set-based SQL (each with its delivery record and one attempt, so 3,000,000 rows), and a
 * worker delivers a steady 100 events/s to a loopback receiver. The emit-to-receipt p99 is taken for 8 s without a
 * prune, then while `pruneHistory` removes the old history; what is inside the retention is counted before and after.
 * Measures only.
 */
import { emitEvent } from "../../domain/webhooks/outbox/events.ts";
import { createEndpoint } from "../../domain/webhooks/endpoints/endpoints.ts";
import { pruneHistory } from "../../domain/webhooks/endpoints/retention.ts";
import { taskList } from "../../jobs/index.ts";
import { connect, type Sql } from "../../domain/infra/db.ts";
import type { Deps } from "../../domain/infra/deps.ts";
import { setLogLevel } from "../../domain/basics/log.ts";
import { migrate } from "../../domain/infra/migrate.ts";
import { secretBoxFor } from "../../domain/infra/secret_box.ts";
import { startWorker, stopWorker } from "../../domain/infra/worker.ts";
import { dropDatabase, freshDatabase } from "../support/helpers.ts";
import { benchConfig } from "./service.ts";
import { type Figures, round } from "./figures.ts";
import { partitionPastDays } from "./partitions.ts";
import { percentile, startReceiver } from "./webhooks.ts";

const ROWS = Number(Deno.env.get("BENCH_PRUNE_EVENTS") ?? 1_000_000);
const DAYS_OF_HISTORY = 45;
const RETENTION_DAYS = 30;
const RATE = 100;
const QUIET_SECONDS = 8;

/** `count` events spread evenly between `fromDays` and `toDays` ago, each with a succeeded record and its attempt. */
async function seed(sql: Sql, companyId: string, endpointId: string, count: number, fromDays: number, toDays: number) {
  const span = (fromDays - toDays) * 86_400;
  await sql`
    with ev as (
      insert into events (id, company_id, type, data, inserted_at)
      select uuid_v7(), ${companyId}, 'identified', json_build_object('transaction_id', gen_random_uuid()),
             now() - make_interval(days => ${toDays}::int) - make_interval(secs => i * ${span}::float8 / ${count}::int)
      from generate_series(1, ${count}::int) as i
      returning id, inserted_at
    ), d as (
      insert into webhook_deliveries (id, company_id, event_id, endpoint_id, type, status, attempts, schedule_attempts,
                                      inserted_at, updated_at)
      select uuid_v7(), ${companyId}, id, ${endpointId}, 'identified', 'succeeded', 1, 1, inserted_at, inserted_at
      from ev
      returning id, inserted_at
    )
    insert into webhook_attempts (id, delivery_id, company_id, attempt_number, http_status, response_body, duration_ms,
                                  inserted_at)
    select uuid_v7(), id, ${companyId}, 1, 200, 'ok', 12, inserted_at from d`;
}

/** Rows of the three history tables written before `before`. */
async function historyRows(sql: Sql, before: Date): Promise<number> {
  const [{ n }] = await sql<{ n: number }[]>`
    select (select count(*) from events where inserted_at < ${before})
         + (select count(*) from webhook_deliveries where inserted_at < ${before})
         + (select count(*) from webhook_attempts where inserted_at < ${before}) as n`;
  return Number(n);
}

export async function benchVolumePrune(): Promise<Figures> {
  setLogLevel("silent");
  const url = await freshDatabase("bench_volume_prune");
  const config = benchConfig(url);
  const sql = connect(url, { max: 10 });
  const receiver = await startReceiver();
  let worker: Awaited<ReturnType<typeof startWorker>> | null = null;
  try {
    await migrate(sql, url);
    await partitionPastDays(sql, DAYS_OF_HISTORY);
    const companyId = crypto.randomUUID();
    await sql`insert into companies (id) values (${companyId})`;
    const endpoint = await createEndpoint(sql, companyId, { url: receiver.url, max_concurrency: 20 }, {
      allowPrivateUrls: true,
      quota: { endpoints: 10, concurrency: 100 },
      box: await secretBoxFor(config),
    });
    const seeding = performance.now();
    await seed(sql, companyId, endpoint.id, ROWS, DAYS_OF_HISTORY - 1, RETENTION_DAYS + 1);
    // what must stay: ten days inside the retention
    await seed(sql, companyId, endpoint.id, ROWS / 100, RETENTION_DAYS - 2, 1);
    await sql`analyze`;
    const seedSeconds = (performance.now() - seeding) / 1000;
    // the seeding's writes flushed now, so that neither window below pays for them (needs a superuser: else skipped)
    await sql`checkpoint`.catch(() => {});
    const [{ kept_before }] = await sql<{ kept_before: number }[]>`
      select count(*)::int as kept_before from webhook_deliveries
      where inserted_at > now() - make_interval(days => ${RETENTION_DAYS}::int)
        and inserted_at < now() - interval '1 hour'`;
    const cutoff = new Date(Date.now() - RETENTION_DAYS * 86_400_000);
    const rowsBefore = await historyRows(sql, cutoff);

    const deps = { sql, config, processId: crypto.randomUUID() } as Deps;
    worker = await startWorker(url, config.workerConcurrency, taskList(deps));

    // Steady events until `done()` says so; answers the emit-to-receipt latencies of that window.
    const steady = async (done: (elapsedMs: number) => boolean) => {
      await receiver.reset();
      const emitMs: number[] = [];
      const started = performance.now();
      const pending: Promise<unknown>[] = [];
      for (let i = 0; !done(performance.now() - started); i++) {
        const wait = started + (i * 1000) / RATE - performance.now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        const t = performance.now();
        pending.push(
          sql.begin((tx) => emitEvent(tx, companyId, "identified", { transaction_id: crypto.randomUUID() }))
            .then(() => emitMs.push(performance.now() - t)),
        );
      }
      await Promise.all(pending);
      await receiver.until(pending.length, 120_000);
      return { deliveries: (await receiver.latencies()).sort((a, b) => a - b), emits: emitMs.sort((a, b) => a - b) };
    };

    await steady((ms) => ms > 2000); // warm-up: connections opened, statements prepared
    const quiet = await steady((ms) => ms > QUIET_SECONDS * 1000);
    let pruneDone = false;
    const pruneStarted = performance.now();
    const pruning = pruneHistory(sql, { retentionDays: RETENTION_DAYS }).then((pruned) => {
      pruneDone = true;
      return pruned;
    });
    // at least two seconds of deliveries, and all of the prune
    const during = await steady((ms) => pruneDone && ms > 2000);
    const pruned = await pruning;
    const pruneSeconds = (performance.now() - pruneStarted) / 1000;
    const [{ kept_after }] = await sql<{ kept_after: number }[]>`
      select count(*)::int as kept_after from webhook_deliveries
      where inserted_at > now() - make_interval(days => ${RETENTION_DAYS}::int)
        and inserted_at < now() - interval '1 hour'`;
    const rowsAfter = await historyRows(sql, cutoff);

    console.log(
      `\nPrune: ${rowsBefore - rowsAfter} rows in ${pruneSeconds.toFixed(2)} s (${pruned.partitions_dropped.length}` +
        ` partitions dropped, ${pruned.deliveries} delivery records deleted in batches);` +
        ` delivery p99 ${percentile(quiet.deliveries, 0.99)} ms without, ${
          percentile(during.deliveries, 0.99)
        } ms during`,
    );
    return {
      prune_history_rows: rowsBefore + kept_before * 3,
      prune_seed_s: round(seedSeconds),
      prune_rows_removed: rowsBefore - rowsAfter,
      prune_rows_left_past_retention: rowsAfter,
      prune_partitions_dropped: pruned.partitions_dropped.length,
      prune_records_deleted_in_batches: pruned.deliveries,
      prune_s: round(pruneSeconds, 2),
      prune_lost_within_retention: kept_before - kept_after,
      prune_delivery_p99_quiet_ms: percentile(quiet.deliveries, 0.99),
      prune_delivery_p99_during_ms: percentile(during.deliveries, 0.99),
      prune_emit_p99_quiet_ms: round(percentile(quiet.emits, 0.99), 2),
      prune_emit_p99_during_ms: round(percentile(during.emits, 0.99), 2),
    };
  } finally {
    if (worker) await stopWorker(worker);
    await receiver.close();
    await sql.end({ timeout: 2 });
    await dropDatabase(url);
  }
}
