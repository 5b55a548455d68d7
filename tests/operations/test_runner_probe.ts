/**
 * Not part of the suite (its name does not end in `_test`): tests/operations/test_runner_test.ts runs it through
 * the test runner and reads what it saw from the file PROBE_REPORT names. With PROBE_FAIL set it fails the way a
 * crashed test does, leaving its database behind.
 */
import postgres from "postgres";
import { dropDatabase, freshDatabase } from "../support/helpers.ts";

Deno.test("probe: where the runner pointed the tests", async () => {
  const database = await freshDatabase("runner_probe");
  const sql = postgres(database, { max: 1, onnotice: () => {} });
  let seen;
  try {
    [seen] = await sql<{ data_directory: string; port: string }[]>`
      select current_setting('data_directory') as data_directory, current_setting('port') as port`;
  } finally {
    await sql.end();
  }
  await Deno.writeTextFile(
    Deno.env.get("PROBE_REPORT")!,
    JSON.stringify({
      url: Deno.env.get("TEST_DATABASE_URL"),
      database: decodeURIComponent(new URL(database).pathname.slice(1)),
      dataDirectory: seen.data_directory,
      port: Number(seen.port),
    }),
  );
  if (Deno.env.get("PROBE_FAIL")) throw new Error("failing on purpose, without dropping its database");
  await dropDatabase(database);
});
