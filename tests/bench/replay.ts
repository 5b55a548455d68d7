/**
 * Replay after disable (`BENCH_ONLY=replay`): how long one recover with include_skipped takes to queue 10,000 events
 * an endpoint missed while it was disabled, among as many events of a type it does not enable and as many of another
 * company, all in the hour of the disabled period. Then the same call again (it finds every event with its record and
 * queues nothing), and the call for an endpoint with a filter (each event read with its data and evaluated), each
 * after a call that opens the connections and prepares the statements. No worker runs: the records stay pending.
 * Measures only.
 */
import { recoverDeliveries } from "../../domain/webhooks/endpoints/deliveries.ts";
import { createEndpoint, disableEndpoint, enableEndpoint } from "../../domain/webhooks/endpoints/endpoints.ts";
import { REPLAY_LIMIT } from "../../domain/webhooks/outbox/replay.ts";
import { connect, type Sql } from "../../domain/infra/db.ts";
import { setLogLevel } from "../../domain/basics/log.ts";
import { migrate } from "../../domain/infra/migrate.ts";
import { secretBoxFor } from "../../domain/infra/secret_box.ts";
import { dropDatabase, freshDatabase } from "../support/helpers.ts";
import { benchConfig } from "./service.ts";
import { type Figures, round } from "./figures.ts";

const EVENTS = 10_000;

/** `count` events of `type` for `companyId`, spread over the last hour. */
async function seed(sql: Sql, companyId: string, type: string, count: number) {
  await sql`
    insert into events (id, company_id, type, data, inserted_at)
    select uuid_v7(), ${companyId}, ${type}, json_build_object('transaction_id', gen_random_uuid()),
           now() - interval '1 hour' + make_interval(secs => i * 3600.0 / ${count}::int)
    from generate_series(1, ${count}::int) as i`;
}

export async function benchReplay(): Promise<Figures> {
  setLogLevel("silent");
  const url = await freshDatabase("bench_replay");
  const config = benchConfig(url);
  const sql = connect(url, { max: 4 });
  try {
    await migrate(sql, url);
    const [companyId, otherId] = [crypto.randomUUID(), crypto.randomUUID()];
    await sql`insert into companies (id) values (${companyId}), (${otherId})`;
    const opts = {
      allowPrivateUrls: true,
      quota: { endpoints: 10, concurrency: 100 },
      box: await secretBoxFor(config),
    };
    const plain = await createEndpoint(sql, companyId, {
      url: "http://127.0.0.1:9/plain",
      enabled_events: ["identified"],
    }, opts);
    const filtered = await createEndpoint(
      sql,
      companyId,
      {
        url: "http://127.0.0.1:9/filtered",
        enabled_events: ["identified"],
        filter: 'event_type == "identified" && data.transaction_id != ""',
      } as Parameters<typeof createEndpoint>[2],
      opts,
    );
    for (const e of [plain, filtered]) await disableEndpoint(sql, companyId, e.id);
    // the period began before the hour the events are spread over
    await sql`update webhook_endpoint_disabled_periods set disabled_from = now() - interval '2 hours'`;
    await seed(sql, companyId, "identified", EVENTS);
    await seed(sql, companyId, "payment_approved", EVENTS);
    await seed(sql, otherId, "identified", EVENTS);
    for (const e of [plain, filtered]) await enableEndpoint(sql, companyId, e.id, opts);
    const warm = await createEndpoint(sql, companyId, { url: "http://127.0.0.1:9/warm" }, opts);
    await disableEndpoint(sql, companyId, warm.id);
    await enableEndpoint(sql, companyId, warm.id, opts);
    await sql`analyze`;

    const since = new Date(Date.now() - 3 * 3_600_000);
    const timed = async (endpointId: string) => {
      const started = performance.now();
      const r = await recoverDeliveries(sql, companyId, endpointId, { since }, {
        includeSkipped: true,
        retentionDays: config.eventRetentionDays,
      });
      return { ms: performance.now() - started, ...r };
    };
    await timed(warm.id); // connections opened and statements prepared: its period holds no event
    const first = await timed(plain.id);
    const again = await timed(plain.id);
    const withFilter = await timed(filtered.id);
    if (
      first.skipped !== Math.min(EVENTS, REPLAY_LIMIT) || again.skipped !== 0 || withFilter.skipped !== first.skipped
    ) {
      throw new Error(`replay queued ${first.skipped}, then ${again.skipped}, filtered ${withFilter.skipped}`);
    }
    return {
      replay_10k_queue_ms: round(first.ms),
      replay_10k_again_ms: round(again.ms),
      replay_10k_filtered_queue_ms: round(withFilter.ms),
    };
  } finally {
    await sql.end({ timeout: 2 });
    await dropDatabase(url);
  }
}
