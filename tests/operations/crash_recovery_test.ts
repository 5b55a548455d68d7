/**
 * A service killed with SIGKILL mid-delivery and started again delivers every event, none lost: the crash story of
 * docs/architecture.md, "At-least-once delivery", with real processes.
 */
import assert from "node:assert/strict";
import { emitEvent } from "../../domain/webhooks/outbox/events.ts";
import { connect } from "../../domain/infra/db.ts";
import { setLogLevel } from "../../domain/basics/log.ts";
import { dropDatabase, eventually, freshDatabase } from "../support/helpers.ts";
import { httpCompany, startService } from "../support/service_process.ts";
import { countingReceiver } from "../support/webhook_receiver.ts";
import { createEndpointAt } from "../support/endpoints.ts";

const EVENTS = 1_000;

Deno.test("a service killed with SIGKILL in the middle of delivery loses nothing after a restart", async () => {
  setLogLevel("silent");
  const url = await freshDatabase("crash_recovery");
  const { receiver, arrivals, counts: received, useSecret } = countingReceiver(5);

  let service = await startService(url);
  const sql = connect(url, { max: 2 });
  try {
    const company = await httpCompany();
    const endpoint = await createEndpointAt(company, service.base, `${receiver.url}/crash`, { max_concurrency: 8 });
    useSecret(endpoint.secret);

    // the producer: 1,000 events through the events module, committed in batches of 100
    for (let batch = 0; batch < EVENTS / 100; batch++) {
      await sql.begin(async (tx) => {
        for (let i = 0; i < 100; i++) {
          await emitEvent(tx, company.id, "payment_approved", { transaction_id: crypto.randomUUID() });
        }
      });
    }

    await eventually("deliveries under way", () => arrivals.size >= 150, 30_000, 5);
    await service.kill();
    const deliveredBeforeCrash = arrivals.size;
    assert.ok(deliveredBeforeCrash < EVENTS, "the crash happened in the middle of delivery");

    service = await startService(url);
    const counts = await eventually(
      "every delivery record to succeed",
      async () => {
        const [row] = await sql<{ succeeded: string; total: string }[]>`
        select count(*) filter (where status = 'succeeded') as succeeded, count(*) as total from webhook_deliveries`;
        return row.succeeded === String(EVENTS) ? row : null;
      },
      60_000,
      100,
    );
    assert.equal(counts.total, String(EVENTS));

    const records = await sql<{ id: string }[]>`select id from webhook_deliveries`;
    const undelivered = records.filter((r) => !arrivals.has(r.id));
    assert.deepEqual(undelivered, [], "every event reached the receiver at least once");
    assert.equal(received.badSignatures, 0);
    const [orphans] = await sql<{ n: string }[]>`
      select count(*) as n from graphile_worker.jobs j
      where j.locked_at is not null
        and not exists (select 1 from worker_processes w where j.locked_by = any(w.worker_ids))`;
    assert.equal(orphans.n, "0", "no job is left locked by the dead process");
  } finally {
    await service.stop();
    await sql.end();
    await dropDatabase(url);
    await receiver.close();
  }
});
