/**
 * Two worker instances and an API-only one on one database serve and deliver together: max_concurrency and sequential
 * order hold across processes, and each instance stops gracefully.
 */
import assert from "node:assert/strict";
import project from "../../deno.json" with { type: "json" };
import { connect } from "../../domain/infra/db.ts";
import { setLogLevel } from "../../domain/basics/log.ts";
import { dropDatabase, eventually, freshDatabase } from "../support/helpers.ts";
import { httpCompany, type ServiceProcess, startService } from "../support/service_process.ts";
import { sleep, startReceiver } from "../support/webhook_receiver.ts";
import { createEndpointAt } from "../support/endpoints.ts";

const PAYMENTS = 30;

Deno.test("two worker instances and an API-only one serve and deliver together", async (t) => {
  setLogLevel("silent");
  const url = await freshDatabase("scale_out");
  // which delivery ids are being received right now, to catch one attempted twice at once
  const inFlight = new Map<string, number>();
  let sameDeliveryTwiceAtOnce = 0;
  const sequentialOrder: string[] = [];
  const failedOnce = new Set<string>();
  let failTransaction = "";
  const receiver = startReceiver(async (arrival) => {
    const id: string = arrival.body.id;
    inFlight.set(id, (inFlight.get(id) ?? 0) + 1);
    if (inFlight.get(id)! > 1) sameDeliveryTwiceAtOnce++;
    try {
      await sleep(20);
      if (arrival.path === "/sequential") {
        const tx: string = arrival.body.data.transaction_id;
        sequentialOrder.push(tx);
        if (tx === failTransaction && !failedOnce.has(tx)) {
          failedOnce.add(tx);
          return new Response("try later", { status: 503 });
        }
      }
      return new Response("ok");
    } finally {
      inFlight.set(id, inFlight.get(id)! - 1);
    }
  });

  const services: ServiceProcess[] = [];
  const sql = connect(url, { max: 2 });
  try {
    const first = await startService(url);
    services.push(first);
    const [second, apiOnly] = await Promise.all([startService(url), startService(url, { WORKER: "off" })]);
    services.push(second, apiOnly);
    const company = await httpCompany();

    await t.step("the API-only instance is ready without a worker; the others run one", async () => {
      const ready = await fetch(`${apiOnly.base}/readyz`).then((r) => r.json());
      assert.deepEqual(ready, { status: "ready", database: "ok", worker: "off", version: project.version });
      const [registered] = await sql<{ n: string }[]>`select count(*) as n from worker_processes`;
      assert.equal(registered.n, "2");
    });

    let parallelId = "";
    await t.step("an endpoint created on one instance is seen by the others", async () => {
      parallelId =
        (await createEndpointAt(company, apiOnly.base, `${receiver.url}/parallel`, { max_concurrency: 3 })).id;
      await createEndpointAt(company, first.base, `${receiver.url}/sequential`, { delivery_mode: "sequential" });
      const shown = await company.call(second.base, "GET", `/api/v2/notifications/endpoints/${parallelId}`);
      assert.equal(shown.body.data.max_concurrency, 3);
    });

    const transactions: string[] = [];
    await t.step("payments made through every instance are all delivered", async () => {
      const person = await company.call(apiOnly.base, "POST", "/api/v1/subject/people", {
        person: { document_number: "52998224725", document_type: "cpf", social_name: "Ana", fiscal_country: "BRA" },
      });
      assert.equal(person.status, 201);
      for (let i = 0; i < PAYMENTS; i++) {
        const via = services[i % services.length];
        const paid = await company.call(via.base, "POST", "/api/sandbox/card_payments", {
          subject_id: person.body.data.id,
          value: "10.00",
          currency: "BRL",
          outcome: "approved",
        });
        assert.equal(paid.status, 201, JSON.stringify(paid.body));
        transactions.push(paid.body.data.id);
        if (i === 4) failTransaction = paid.body.data.id;
      }
      await eventually(
        "every record to succeed",
        async () => {
          const [row] = await sql<{ succeeded: string }[]>`
          select count(*) filter (where status = 'succeeded') as succeeded from webhook_deliveries`;
          return row.succeeded === String(PAYMENTS * 2);
        },
        60_000,
        100,
      );
    });

    await t.step("max_concurrency holds across processes and no delivery runs twice at once", () => {
      assert.ok(receiver.maxInFlight("/parallel") <= 3, `max in flight ${receiver.maxInFlight("/parallel")}`);
      assert.equal(receiver.at("/parallel").length, PAYMENTS, "each parallel delivery arrived once");
      assert.equal(sameDeliveryTwiceAtOnce, 0);
    });

    await t.step("the sequential endpoint got one at a time, in event order, the failed one holding the rest", () => {
      assert.equal(receiver.maxInFlight("/sequential"), 1);
      const failedAt = transactions.indexOf(failTransaction);
      const expected = [...transactions.slice(0, failedAt + 1), ...transactions.slice(failedAt)];
      assert.deepEqual(sequentialOrder, expected);
    });

    await t.step("every instance stops gracefully", async () => {
      const statuses = await Promise.all(services.splice(0).map((s) => s.stop()));
      assert.deepEqual(statuses.map((s) => s.code), [0, 0, 0]);
    });
  } finally {
    await Promise.all(services.map((s) => s.kill()));
    await sql.end();
    await dropDatabase(url);
    await receiver.close();
  }
});
