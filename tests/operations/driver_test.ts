/**
 * The database driver when the server ends a session under it, as a failover or an operator's
 * `pg_terminate_backend` does (docs/database-driver.md): the statements of that session fail as unreachable, nothing
 * of it runs on the session that replaces it, and the pool answers the next statement. postgres.js 3.4.9 as published
 * fails each of these steps (its next statement waits forever); vendor/postgres carries the patch.
 */
import assert from "node:assert/strict";
import { connect, isDatabaseUnreachable, type Sql, type TransactionSql } from "../../domain/infra/db.ts";
import { dropDatabase, freshDatabase } from "../support/helpers.ts";

/** `promise`, or a failure naming `what` after 5 s: a wedged connection fails the step instead of hanging the run. */
async function answered<T>(what: string, promise: Promise<T>): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within 5 s`)), 5_000);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

Deno.test("a session ended under the driver fails its statements and the pool serves the next", async (t) => {
  const url = await freshDatabase("driver_session_ended");
  // one connection: the statement after the loss can only be answered by the connection that was lost, reconnected
  const sql = connect(url, { max: 1 });
  const admin = connect(url, { max: 1 });
  const unreachable = (err: unknown) => isDatabaseUnreachable(err);
  const pidOf = async (tx: Sql | TransactionSql) =>
    (await tx<{ pid: number }[]>`select pg_backend_pid() as pid`)[0].pid;
  const end = async (pid: number) => {
    await admin`select pg_terminate_backend(${pid})`;
    await new Promise((r) => setTimeout(r, 100));
  };
  const next = async () => (await answered("the next statement", sql<{ n: number }[]>`select 8 as n`))[0].n;
  try {
    await sql`create table moves (n int primary key)`;

    await t.step("a statement of the pool ended mid-flight", async () => {
      const pid = await pidOf(sql);
      await assert.rejects(
        answered("the ended statement", Promise.all([sql`select pg_sleep(5)`, end(pid)])),
        unreachable,
      );
      assert.equal(await next(), 8);
    });

    await t.step("a transaction ended mid-statement, and one ended between statements", async () => {
      await assert.rejects(
        answered(
          "the ended transaction",
          sql.begin(async (tx) => {
            const pid = await pidOf(tx);
            await Promise.all([tx`insert into moves values (1)`, tx`select pg_sleep(5)`, end(pid)]);
          }),
        ),
        unreachable,
      );
      assert.equal(await next(), 8);
      await assert.rejects(
        answered(
          "the transaction ended between statements",
          sql.begin(async (tx) => {
            await end(await pidOf(tx));
            await tx`insert into moves values (2)`;
          }),
        ),
        unreachable,
      );
      assert.equal(await next(), 8);
      const rows = await admin<{ n: number }[]>`select n from moves`;
      assert.equal(rows.length, 0, "nothing of an ended transaction is kept, nor run outside it");
    });

    await t.step("a reserved connection ended, then handed back", async () => {
      const reserved = await sql.reserve();
      await end(await pidOf(reserved as unknown as Sql));
      await assert.rejects(answered("a statement after the loss", reserved`select 1`.execute()), unreachable);
      reserved.release();
      assert.equal(await next(), 8);
    });
  } finally {
    await sql.end({ timeout: 1 });
    await admin.end({ timeout: 1 });
    await dropDatabase(url);
  }
});
