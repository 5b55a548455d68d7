import assert from "node:assert/strict";
import { connect } from "../../domain/infra/db.ts";
import { setLogLevel } from "../../domain/basics/log.ts";
import { migrate, migrationFiles } from "../../domain/infra/migrate.ts";
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
