/**
 * An operator finds every failed attempt in the service's log at the default level: one warn line per attempt,
 * naming the record, its endpoint, the event type and the status.
 */
import assert from "node:assert/strict";
import { emitEvent } from "../../domain/webhooks/outbox/events.ts";
import { connect } from "../../domain/infra/db.ts";
import { dropDatabase, eventually, freshDatabase } from "../support/helpers.ts";
import { httpCompany, startService } from "../support/service_process.ts";
import { sleep, startReceiver } from "../support/webhook_receiver.ts";
import { createEndpointAt } from "../support/endpoints.ts";

const ATTEMPTS = 10; // what WEBHOOK_RETRY_SCHEDULE "0.05" expands to

Deno.test("an operator finds every failed attempt in the service's log at the default level", async () => {
  const url = await freshDatabase("webhook_failure_log");
  const receiver = startReceiver(() => new Response("receiver is down", { status: 500 }));
  // LOG_LEVEL left unset: the level an operator gets without configuring anything
  const service = await startService(url, { LOG_LEVEL: undefined, WEBHOOK_RETRY_SCHEDULE: "0.05" }, { logs: true });
  const sql = connect(url, { max: 1 });
  try {
    const company = await httpCompany();
    const endpointId: string = (await createEndpointAt(company, service.base, `${receiver.url}/down`)).id;
    const transactionId = crypto.randomUUID();
    await sql.begin((tx) => emitEvent(tx, company.id, "payment_failed", { transaction_id: transactionId }));

    const delivery = await eventually("the record fails for good", async () => {
      const rows = await sql<{ id: string; status: string }[]>`
        select id, status from webhook_deliveries where endpoint_id = ${endpointId}`;
      return rows.length === 1 && rows[0].status === "failed" ? rows[0] : null;
    }, 20_000);
    assert.equal(receiver.at("/down").length, ATTEMPTS);

    const failedLines = () => service.logs().filter((l) => l.msg === "webhook attempt failed");
    await eventually("a line per attempt", () => failedLines().length >= ATTEMPTS);
    await sleep(300); // several retry periods: a line too many would show by now
    const lines = failedLines();
    assert.equal(lines.length, ATTEMPTS, "exactly one line per failed attempt");
    assert.deepEqual(lines.map((l) => l.attempt), Array.from({ length: ATTEMPTS }, (_, i) => i + 1));
    for (const line of lines) {
      assert.equal(line.level, "warn");
      assert.equal(line.delivery_id, delivery.id);
      assert.equal(line.endpoint_id, endpointId);
      assert.equal(line.event_type, "payment_failed");
      assert.equal(line.http_status, 500);
      assert.equal(line.reason, "HTTP 500");
    }
    assert.equal(lines.at(-1)!.next_attempt_at, "failed for good");

    const all = service.logs();
    assert.deepEqual(all.filter((l) => String(l.msg).startsWith("Completed task")), [], "no job dumped per task");
    const dumping = all.filter((l) => JSON.stringify(l).includes(transactionId));
    assert.deepEqual(dumping, [], "no line carries the event's data");
  } finally {
    await service.stop();
    await sql.end();
    await dropDatabase(url);
    await receiver.close();
  }
});
