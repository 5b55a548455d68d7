/**
 * Starting the service: a port in use, a start without APP_ENV (and a Postgres without autovacuum), and production's
 * configuration problems listed at once, each said in one line before anything is touched.
 */
import assert from "node:assert/strict";
import { databaseExists, dropDatabase, perTestDatabaseUrl } from "../support/databases.ts";
import { ENDPOINTS } from "../support/endpoints.ts";
import { freshDatabase } from "../support/helpers.ts";
import { connect } from "../../domain/infra/db.ts";
import { httpCompany, runServiceToExit, startService } from "../support/service_process.ts";

Deno.test("a service started on a port already in use says which port and exits 1, touching nothing", async () => {
  const squatter = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = squatter.addr as Deno.NetAddr;
  // never created by the test: the service would create and migrate it if it went that far
  const url = perTestDatabaseUrl("start_port_taken");
  try {
    const run = await runServiceToExit(url, port, { LOG_LEVEL: "info" });
    assert.equal(run.code, 1, run.stderr);
    const lines = run.stdout.trim().split("\n").map((line) => JSON.parse(line));
    const last = lines.at(-1);
    assert.equal(last.level, "error");
    assert.equal(last.msg, "cannot start");
    assert.match(last.reason, new RegExp(`^port ${port} on 127\\.0\\.0\\.1 is already in use`));
    assert.ok(!lines.some((l) => l.msg === "listening"), run.stdout);
    assert.doesNotMatch(run.stderr, /Uncaught|AddrInUse|\bat .*:\d+:\d+/, "no stack trace");
    assert.equal(await databaseExists(url), false, "the database was not touched");
  } finally {
    squatter.close();
    await dropDatabase(url);
  }
});

Deno.test("a start without APP_ENV says it runs as development and what that allows; metadata URLs stay refused", async (t) => {
  const url = await freshDatabase("start_without_app_env");
  const unset = { APP_ENV: undefined, WEBHOOK_ALLOW_PRIVATE_URLS: undefined, SANDBOX: undefined, LOG_LEVEL: "info" };
  const service = await startService(url, unset, { logs: true });
  try {
    await t.step("a warning names APP_ENV, the sandbox and the private receiver URLs; listening names the env", () => {
      const lines = service.logs();
      const warning = lines.find((l) => l.level === "warn" && String(l.msg).startsWith("APP_ENV is not set"));
      assert.ok(warning, JSON.stringify(lines));
      assert.match(String(warning.msg), /running as development/);
      assert.match(String(warning.msg), /sandbox routes \(\/api\/sandbox/);
      assert.match(String(warning.msg), /loopback or private addresses \(WEBHOOK_ALLOW_PRIVATE_URLS\)/);
      assert.match(String(warning.msg), /set APP_ENV=production/);
      const listening = lines.find((l) => l.msg === "listening");
      assert.equal(listening?.env, "development", JSON.stringify(listening));
    });

    await t.step("autovacuum off on the server is named in a warning; on, nothing is said", async () => {
      const sql = connect(url, { max: 1 });
      const [{ on }] = await sql<{ on: boolean }[]>`select current_setting('autovacuum') = 'on' as on`;
      await sql.end();
      const warned = service.logs().filter((l) => l.level === "warn" && String(l.msg).startsWith("autovacuum is off"));
      assert.equal(warned.length, on ? 0 : 1, JSON.stringify(warned));
      if (!on) assert.match(String(warned[0].msg), /docs\/production\.md, "Postgres settings"/);
    });

    await t.step("loopback receivers are accepted, the cloud metadata address never", async () => {
      const company = await httpCompany();
      const loopback = await company.call(service.base, "POST", ENDPOINTS, { url: "http://127.0.0.1:9/hook" });
      assert.equal(loopback.status, 201, JSON.stringify(loopback.body));
      for (const target of ["http://169.254.169.254/latest/meta-data/", "http://[fd00:ec2::254]/"]) {
        const res = await company.call(service.base, "POST", ENDPOINTS, { url: target });
        assert.equal(res.status, 422, `${target}: ${JSON.stringify(res.body)}`);
        assert.match(res.body.errors.url[0], /link-local or cloud metadata address/);
      }
    });
  } finally {
    await service.stop();
  }

  await t.step("APP_ENV=test: no warning, and the listening line says test", async () => {
    const named = await startService(url, { ...unset, APP_ENV: "test" }, { logs: true });
    try {
      const lines = named.logs();
      assert.ok(!lines.some((l) => String(l.msg).includes("APP_ENV")), JSON.stringify(lines));
      assert.equal(lines.find((l) => l.msg === "listening")?.env, "test");
    } finally {
      await named.stop();
      await dropDatabase(url);
    }
  });
});

Deno.test("production refuses to start with every configuration problem listed at once, touching nothing", async () => {
  const url = perTestDatabaseUrl("start_every_problem");
  try {
    const run = await runServiceToExit(url, 0, {
      APP_ENV: "production",
      PORT: "not-a-port",
      JWT_SECRET: "",
      WEBHOOK_ALLOW_PRIVATE_URLS: "true",
      METRICS_TOKEN: "m",
    });
    assert.equal(run.code, 1, run.stderr);
    const message = run.stderr.trim();
    assert.match(message, /^invalid configuration:\n/);
    const named = message.split("\n").slice(1).map((line) => line.trim().split(":")[0]);
    assert.deepEqual(named.toSorted(), [
      "JWT_SECRET",
      "METRICS_TOKEN",
      "PORT",
      "SECRET_ENCRYPTION_KEY",
      "WEBHOOK_ALLOW_PRIVATE_URLS",
    ]);
    assert.doesNotMatch(message, /\bat .*:\d+:\d+/, "no stack trace");
    assert.equal(await databaseExists(url), false, "the database was not touched");
  } finally {
    await dropDatabase(url);
  }
});
