import assert from "node:assert/strict";
import postgres from "postgres";
import { adminUrl, dropDatabase, perTestDatabaseUrl } from "../support/databases.ts";
import { runServiceToExit } from "../support/service_process.ts";

async function databaseExists(url: string): Promise<boolean> {
  const name = decodeURIComponent(new URL(url).pathname.slice(1));
  const sql = postgres(adminUrl(url), { max: 1, onnotice: () => {} });
  try {
    return (await sql`select 1 from pg_database where datname = ${name}`).length > 0;
  } finally {
    await sql.end();
  }
}

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
