/**
 * Operational events (`BENCH_ONLY=operational`): what they cost the statement that records attempts. The recorder of
 * the drainers (domain/webhooks/engine/recorder.ts) is driven without HTTP by 16 loops that claim, record a made-up
 * answer and go on with the record handed over, as the drain loop (engine.ts) does, so the figures are the database's side alone:
 * - attempts that succeed: one statement per batch, the path operational events must leave as it was;
 * - attempts that fail (500, a retry schedule of zeros, 10 attempts per record), nobody subscribed: each batch becomes
 *   a transaction, and the operational events find nobody to tell;
 * - the same with an endpoint of the company subscribed: one `endpoint.failing` and one `delivery.exhausted` per
 *   record, emitted in the recorder's transaction.
 */
import { claimNext } from "../../domain/webhooks/engine/statements/claim.ts";
import { attemptRecorder } from "../../domain/webhooks/engine/recorder.ts";
import { createEndpoint } from "../../domain/webhooks/endpoints/endpoints.ts";
import { emitEvent, OPERATIONAL_EVENT_TYPES } from "../../domain/webhooks/outbox/events.ts";
import type { SendResult } from "../../domain/webhooks/engine/sender.ts";
import { connect, type Sql } from "../../domain/infra/db.ts";
import { setLogLevel } from "../../domain/basics/log.ts";
import { migrate } from "../../domain/infra/migrate.ts";
import { secretBoxFor } from "../../domain/infra/secret_box.ts";
import { dropDatabase, freshDatabase } from "../support/helpers.ts";
import { benchConfig } from "./service.ts";
import { type Figures, round } from "./figures.ts";

const LOOPS = 16;
const SUCCEEDING_RECORDS = 5_000;
const FAILING_RECORDS = 1_000;

type Phase = { ok: boolean; subscribed: boolean; records: number };

export async function benchOperational(): Promise<Figures> {
  setLogLevel("silent");
  const url = await freshDatabase("bench_operational");
  const config = benchConfig(url);
  const sql = connect(url, { max: 10 });
  try {
    await migrate(sql, url);
    const box = await secretBoxFor(config);
    const opts = { allowPrivateUrls: true, quota: { endpoints: 10, concurrency: 1_000 }, box };
    const phase = async (name: string, p: Phase) => {
      const companyId = crypto.randomUUID();
      await sql`insert into companies (id) values (${companyId})`;
      const target = await createEndpoint(sql, companyId, {
        url: `http://127.0.0.1:9/${name}`,
        enabled_events: ["identified"],
        max_concurrency: LOOPS,
      }, opts);
      if (p.subscribed) {
        await createEndpoint(sql, companyId, {
          url: `http://127.0.0.1:9/${name}-operator`,
          enabled_events: [...OPERATIONAL_EVENT_TYPES],
        }, opts);
      }
      await seed(sql, companyId, p.records);
      const ms = await drive(sql, companyId, target.id, p.ok);
      const [{ attempts, events }] = await sql<{ attempts: number; events: number }[]>`
        select
          (select count(*)::int from webhook_attempts where company_id = ${companyId}) as attempts,
          (select count(*)::int from webhook_deliveries
            where company_id = ${companyId} and type = any(${[...OPERATIONAL_EVENT_TYPES]}::text[])) as events`;
      const wanted = p.ok ? p.records : p.records * 10;
      const wantedEvents = p.subscribed ? p.records + 1 : 0;
      if (attempts !== wanted || events !== wantedEvents) {
        throw new Error(
          `${name}: ${attempts} attempts (not ${wanted}), ${events} operational records (${wantedEvents})`,
        );
      }
      return round(attempts / (ms / 1000), 0);
    };
    const success = await phase("succeeding", { ok: true, subscribed: false, records: SUCCEEDING_RECORDS });
    const failure = await phase("failing", { ok: false, subscribed: false, records: FAILING_RECORDS });
    const subscribed = await phase("failing-told", { ok: false, subscribed: true, records: FAILING_RECORDS });
    return {
      operational_success_attempts_per_s: success,
      operational_failure_attempts_per_s: failure,
      operational_failure_subscribed_attempts_per_s: subscribed,
      operational_failure_vs_success: round(failure / success, 2),
    };
  } finally {
    await sql.end({ timeout: 2 });
    await dropDatabase(url);
  }
}

/** `count` events of the company, each with one record for its endpoint, in transactions of 500. */
async function seed(sql: Sql, companyId: string, count: number) {
  for (let done = 0; done < count; done += 500) {
    await sql.begin(async (tx) => {
      for (let i = done; i < Math.min(count, done + 500); i++) {
        await emitEvent(tx, companyId, "identified", { transaction_id: crypto.randomUUID() });
      }
    });
  }
}

/** Milliseconds until every record of the endpoint succeeded or failed for good, answered `ok` or 500 at once. */
async function drive(sql: Sql, companyId: string, endpointId: string, ok: boolean): Promise<number> {
  const lease = { leaseMs: 60_000, owner: crypto.randomUUID() };
  const recorder = attemptRecorder(sql, {
    ...lease,
    retrySchedule: Array(9).fill(0),
    disableAfterSeconds: 1e9,
    failingAfterAttempts: 10,
    failingAfterSeconds: 3600,
  });
  const answer: SendResult = ok
    ? { ok: true, httpStatus: 200, responseBody: "ok", durationMs: 1 }
    : { ok: false, httpStatus: 500, responseBody: "broken", durationMs: 1 };
  const loop = async () => {
    let claim = await claimNext(sql, endpointId, lease);
    while (claim?.delivery) {
      claim = (await recorder.record(claim.endpoint, claim.delivery, answer)).next;
    }
  };
  const started = performance.now();
  // a loop ends when nothing is due at its handover; the next round takes up what came due meanwhile
  for (;;) {
    await Promise.all(Array.from({ length: LOOPS }, loop));
    const [{ pending }] = await sql<{ pending: number }[]>`
      select count(*)::int as pending from webhook_deliveries
      where company_id = ${companyId} and endpoint_id = ${endpointId} and status = 'pending'`;
    if (pending === 0) return performance.now() - started;
  }
}
