/**
 * Migrations under concurrency: two instances starting together apply each file once, in order, and the contract step
 * waits until no other release is connected (docs/production.md, "Upgrading").
 */
import assert from "node:assert/strict";
import { connect } from "../../domain/infra/db.ts";
import { setLogLevel } from "../../domain/basics/log.ts";
import { contract, ContractRefused, migrate, migrationFiles } from "../../domain/infra/migrate.ts";
import postgres from "postgres";
import { dropDatabase, freshDatabase } from "../support/helpers.ts";

Deno.test("two instances starting at the same moment apply each migration once, in order", async () => {
  setLogLevel("silent");
  const url = await freshDatabase("migrations");
  const first = connect(url, { max: 2 });
  const second = connect(url, { max: 2 });
  try {
    await Promise.all([migrate(first, url), migrate(second, url)]);
    const applied = await first<
      { version: string }[]
    >`select version from schema_migrations order by applied_at, version`;
    const files = (await migrationFiles()).map((f) => f.version);
    assert.deepEqual(applied.map((r) => r.version), files);
    // a later start finds nothing to do
    await migrate(second, url);
    const [count] = await first<{ n: string }[]>`select count(*) as n from schema_migrations`;
    assert.equal(count.n, String(files.length));
  } finally {
    await first.end();
    await second.end();
    await dropDatabase(url);
  }
});

Deno.test("the contract step waits for every other release to go, then applies its files once", async (t) => {
  setLogLevel("silent");
  const url = await freshDatabase("contract_step");
  const sql = connect(url, { max: 2 });
  const dir = await Deno.makeTempDir();
  try {
    await migrate(sql, url);
    await sql`create table contract_story_leftover (id int)`;
    await Deno.writeTextFile(
      `${dir}/0001_drop_leftover.sql`,
      "set local lock_timeout = '2s';\ndrop table contract_story_leftover;\n",
    );

    for (const [name, shown] of [["payments-api", "payments-api"], ["payments-api/0.9.0", "payments-api/0.9.0"]]) {
      await t.step(`refused while a connection says ${name}`, async () => {
        // an instance of another release: release 1.0.0 named no version, a later one names its own
        const other = postgres(url, { max: 1, connection: { application_name: name }, onnotice: () => {} });
        try {
          await other`select 1`;
          await assert.rejects(contract(sql, new URL(`file://${dir}/`)), (err: Error) => {
            assert.ok(err instanceof ContractRefused);
            assert.match(err.message, new RegExp(`\\(1 as ${shown.replaceAll(".", "\\.")}\\)`));
            return true;
          });
          const [left] = await sql`select to_regclass('contract_story_leftover') as t`;
          assert.equal(left.t, "contract_story_leftover", "nothing was dropped");
        } finally {
          await other.end();
        }
      });
    }

    await t.step("done once only this release is connected, and recorded under contract/", async () => {
      assert.deepEqual(await contract(sql, new URL(`file://${dir}/`)), ["contract/0001_drop_leftover"]);
      const [left] = await sql`select to_regclass('contract_story_leftover') as t`;
      assert.equal(left.t, null);
      assert.deepEqual(await contract(sql, new URL(`file://${dir}/`)), [], "a second run finds nothing to do");
      const [row] = await sql`select count(*)::int as n from schema_migrations where version like 'contract/%'`;
      assert.equal(row.n, 1);
    });
  } finally {
    await sql.end();
    await Deno.remove(dir, { recursive: true });
    await dropDatabase(url);
  }
});
