import assert from "node:assert/strict";
import { databaseExists, dropDatabase, perTestDatabaseUrl } from "../support/databases.ts";
import { runServiceToExit } from "../support/service_process.ts";

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
