/**
 * A claim answers only once the synchronous standby has it, so an attempt never goes out on a lease that a failover
 * to that standby can lose (docs/production.md, "On a Postgres HA cluster"). A Postgres of the test's own stands in
 * for the cluster: a `synchronous_standby_names` no standby answers to is a standby that has not confirmed yet.
 */
import assert from "node:assert/strict";
import { createApp } from "../../routes/app.ts";
import { setLogLevel } from "../../domain/basics/log.ts";
import { loadConfig } from "../../domain/infra/config.ts";
import { connect, ensureDatabase } from "../../domain/infra/db.ts";
import { startEmbeddedPostgres } from "../../domain/infra/embedded_pg.ts";
import { migrate } from "../../domain/infra/migrate.ts";
import { claimNext } from "../../domain/webhooks/engine/statements/claim.ts";
import { leaseMsFor } from "../../domain/webhooks/engine/statements/lease.ts";
import { emitEvent } from "../../domain/webhooks/outbox/events.ts";
import { createEndpoint } from "../support/endpoints.ts";
import { freePort } from "../support/free_port.ts";
import { HIGH_LIMITS, newCompany, TEST_ENCRYPTION_KEY, TEST_JWT_SECRET } from "../support/helpers.ts";
import { sleep } from "../support/webhook_receiver.ts";

/** Far longer than a claim takes on an idle server (a few ms): what "has not answered" means here. */
const UNANSWERED_FOR_MS = 1_000;
/** The pool's sessions, each of which must have read the standby setting before a claim is timed. */
const POOL = 4;

Deno.test("a claim answers only once the synchronous standby has it, on a sequential and a parallel endpoint", async (t) => {
  setLogLevel("silent");
  // A server of this test's own: the standby setting holds every commit of the server, not only this test's.
  const dir = await Deno.makeTempDir({ prefix: "payments-claim-commit-" });
  await Deno.chmod(dir, 0o755);
  const pg = await startEmbeddedPostgres({ databaseDir: `${dir}/data`, port: freePort() });
  const url = new URL(pg.url);
  url.pathname = "/claim_commit";
  const config = loadConfig({
    DATABASE_URL: url.toString(),
    JWT_SECRET: TEST_JWT_SECRET,
    SECRET_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
    WEBHOOK_ALLOW_PRIVATE_URLS: "true",
    LOG_LEVEL: "silent",
    ...HIGH_LIMITS,
  });
  const sql = connect(config.databaseUrl, { max: POOL });
  const admin = connect(config.databaseUrl, { max: 1 });
  const standby = async (names: string) => {
    await admin.unsafe(`alter system set synchronous_standby_names = '${names}'`);
    await admin`select pg_reload_conf()`;
    // every session reads the reload on its own, when its signal comes: the claim may go through any of the pool's,
    // so each must show the setting (seen once on the admin's alone, a loaded machine let a claim go before it)
    await eventuallyShows(admin, names);
    const sessions = await Promise.all(Array.from({ length: POOL }, () => sql.reserve()));
    try {
      for (const session of sessions) await eventuallyShows(session, names);
    } finally {
      for (const session of sessions) session.release();
    }
  };
  const eventuallyShows = async (session: typeof admin | Awaited<ReturnType<typeof sql.reserve>>, names: string) => {
    for (let i = 0; i < 100; i++) {
      const [{ s }] = await session<{ s: string }[]>`select current_setting('synchronous_standby_names') as s`;
      if (s === names) return;
      await sleep(20);
    }
    throw new Error(`synchronous_standby_names never became ${JSON.stringify(names)}`);
  };
  try {
    await ensureDatabase(config.databaseUrl);
    await migrate(sql, config.databaseUrl);
    const app = createApp({ sql, config, processId: crypto.randomUUID() });
    const company = await newCompany({ app });
    const lease = { leaseMs: leaseMsFor(config.webhookTimeoutMs), owner: crypto.randomUUID() };

    for (const settings of [{ delivery_mode: "sequential" }, { max_concurrency: 3 }]) {
      await t.step(JSON.stringify(settings), async () => {
        const endpoint = await createEndpoint(company, `http://127.0.0.1:9/${crypto.randomUUID()}`, settings);
        await sql.begin((tx) => emitEvent(tx, company.id, "identified", { transaction_id: crypto.randomUUID() }));
        const [record] = await sql<{ id: string }[]>`
          select id from webhook_deliveries where endpoint_id = ${endpoint.id}`;

        await standby("a_standby_that_has_not_confirmed");
        let answered = false;
        const claiming = claimNext(sql, endpoint.id, lease).finally(() => answered = true);
        try {
          await sleep(UNANSWERED_FOR_MS);
          assert.equal(answered, false, "the claim answered before the standby had it: its attempt could go out");
        } finally {
          await standby("");
        }
        const claim = await claiming;
        assert.equal(claim?.delivery?.id, record.id, "once the standby has it, the claim answers with the record");
      });
    }
  } finally {
    await admin.unsafe(`alter system reset synchronous_standby_names`).catch(() => {});
    await admin`select pg_reload_conf()`.catch(() => {});
    await sql.end({ timeout: 2 });
    await admin.end({ timeout: 2 });
    await pg.stop();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});
