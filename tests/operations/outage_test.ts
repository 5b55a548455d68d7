/**
 * Postgres restarted in the middle of a burst: the service answers 503 meanwhile, reconnects by itself and loses no
 * event or delivery. Runs its own embedded server so stopping it touches no other test.
 */
import assert from "node:assert/strict";
import { startEmbeddedPostgres } from "../../domain/infra/embedded_pg.ts";
import { setLogLevel } from "../../domain/basics/log.ts";
import { freePort } from "../support/free_port.ts";
import { eventually } from "../support/helpers.ts";
import { httpCompany, startService } from "../support/service_process.ts";
import { countingReceiver, sleep } from "../support/webhook_receiver.ts";
import { createEndpointAt } from "../support/endpoints.ts";

const EVENTS = 300;
let current: { stderr: () => string } | null = null;
const MAX_CONCURRENCY = 4;

/** /readyz's status and body. */
async function readiness(base: string): Promise<string> {
  const res = await fetch(`${base}/readyz`).catch((err) => {
    throw new Error(`/readyz: ${err.message}; the service said: ${current?.stderr()}`);
  });
  return `${res.status} ${await res.text()}`;
}

Deno.test("Postgres restarted in the middle of a burst: the service carries on by itself and loses nothing", async () => {
  setLogLevel("silent");
  // A server of this test's own, so that stopping it touches no other test.
  const dir = await Deno.makeTempDir({ prefix: "payments-outage-" });
  await Deno.chmod(dir, 0o755);
  const pg = await startEmbeddedPostgres({ databaseDir: `${dir}/data`, port: freePort() });
  const url = new URL(pg.url);
  url.pathname = "/outage";

  const { receiver, arrivals, counts, useSecret } = countingReceiver(3);
  const service = await startService(url.toString(), { WORKER_CONCURRENCY: "4" }, { readyTimeoutMs: 60_000 });
  current = service;
  let serviceExited = false;
  service.child.status.then(() => serviceExited = true);
  try {
    const company = await httpCompany();
    const endpoint = await createEndpointAt(company, service.base, `${receiver.url}/outage`, {
      max_concurrency: MAX_CONCURRENCY,
    });
    useSecret(endpoint.secret);
    const testEvent = `/api/v2/notifications/endpoints/${endpoint.id}/test`;

    // The producer: test events one after the other, each a transaction with its delivery record and job, through
    // the outage. What answered 202 must arrive; what did not was not stored.
    const accepted: string[] = [];
    const refusals: number[] = [];
    const unexpected: string[] = [];
    const producing = (async () => {
      const deadline = Date.now() + 60_000;
      while (accepted.length < EVENTS && Date.now() < deadline) {
        const res = await company.call(service.base, "POST", testEvent, { type: "identified" }).catch((err) => ({
          status: 0,
          body: String(err),
        }));
        if (res.status === 202) accepted.push(res.body.data.id);
        else if (res.status === 503) refusals.push(res.status);
        else unexpected.push(`${res.status} ${JSON.stringify(res.body)}`);
        if (res.status !== 202) await sleep(20);
      }
    })();

    await eventually("a third of the burst accepted", () => accepted.length >= EVENTS / 3, 30_000, 5);
    const acceptedBefore = accepted.length;
    await pg.stop();
    await eventually("/readyz answers 503 while the database is away", async () => {
      return (await readiness(service.base)).startsWith("503 ");
    }, 10_000);
    await sleep(1_000);
    await pg.start();
    let ready = "";
    await eventually(
      "/readyz answers 200 again, without a restart",
      async () => (ready = await readiness(service.base)).startsWith("200 ") || null,
      30_000,
      100,
    ).catch(async (err) => {
      const direct = await import("../../domain/infra/db.ts").then(({ serverAnswers }) => serverAnswers(url.href));
      throw new Error(
        `${err.message}: ${ready}; the server answers directly: ${direct}; the service said: ${service.stderr()}`,
      );
    });
    await producing;

    assert.deepEqual(unexpected, [], "every answer was 202, or 503 while the database was away");
    assert.ok(refusals.length > 0, "requests made during the outage were refused with 503");
    assert.ok(accepted.length > acceptedBefore, "events were accepted again after the outage");
    assert.equal(accepted.length, EVENTS);
    await eventually(
      "every accepted event delivered",
      () => accepted.every((id) => arrivals.has(id)),
      60_000,
      100,
    );
    const repeated = [...arrivals.values()].filter((n) => n > 1).length;
    assert.ok(
      repeated <= MAX_CONCURRENCY,
      `${repeated} deliveries arrived twice: at most those in flight when the database went away may`,
    );
    // A request cut off while its commit was reaching the disk answers 503 although its event exists: the
    // integrator's retry with the same Idempotency-Key (docs/errors.md, Status codes) makes that safe. One such
    // request per producer in flight at the moment the server stopped, at most.
    const unannounced = [...arrivals.keys()].filter((id) => !accepted.includes(id));
    assert.ok(unannounced.length <= 1, `${unannounced.length} deliveries of events whose request failed`);
    assert.equal(counts.badSignatures, 0);
    assert.equal(serviceExited, false, "the same process carried on");
  } finally {
    await service.stop();
    await receiver.close();
    await pg.stop().catch(() => {});
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});
