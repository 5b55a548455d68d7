/**
 * The database driver when the server ends a session under it, as a failover or an operator's
 * `pg_terminate_backend` does (docs/database-driver.md): the statements of that session fail as unreachable, nothing
 * of it runs on the session that replaces it, and the pool answers the next statement; a `sql.reserve()` waiting for a
 * connection meanwhile is served by the reconnected one. postgres.js 3.4.9 as published fails each of these steps (its
 * next statement or reservation waits forever), but for the refused reconnect, which holds what the fix keeps;
 * vendor/postgres carries the patches.
 */
import assert from "node:assert/strict";
import postgres from "postgres";
import { connect, isDatabaseUnreachable, type Sql, transaction, type TransactionSql } from "../../domain/infra/db.ts";
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

Deno.test("a reservation waiting for a connection is served when a connection of the pool closes", async (t) => {
  const url = await freshDatabase("driver_reserve_waiting");
  const admin = connect(url, { max: 1 });
  const unreachable = (err: unknown) => isDatabaseUnreachable(err);
  type Statements = Sql | postgres.ReservedSql;
  const pidOf = async (on: Statements) => (await (on as Sql)<{ pid: number }[]>`select pg_backend_pid() as pid`)[0].pid;
  const end = async (pid: number) => {
    await admin`select pg_terminate_backend(${pid})`;
    await new Promise((r) => setTimeout(r, 100));
  };
  /** The waiting reservation, once served: it runs a statement on a session other than the ended one. */
  const served = async (what: string, waiting: Promise<postgres.ReservedSql>, ended: number) => {
    const reserved = await answered(what, waiting);
    try {
      const pid = await answered(`a statement of ${what}`, pidOf(reserved));
      assert.notEqual(pid, ended, "the reservation runs on a live session");
    } finally {
      reserved.release();
    }
  };
  const running = async (pid: number) => {
    const sleeping = () =>
      admin`select 1 from pg_stat_activity where pid = ${pid} and state = 'active' and query like 'select pg_sleep%'`;
    while (!(await sleeping()).length) await new Promise((r) => setTimeout(r, 20));
  };
  const next = async (sql: Sql) => (await answered("the next statement", sql<{ n: number }[]>`select 8 as n`))[0].n;
  /** A pool for one step, ended whatever the step's outcome. */
  const pool = async (max: number, step: (sql: Sql) => Promise<void>) => {
    const sql = connect(url, { max });
    try {
      await step(sql);
    } finally {
      await sql.end({ timeout: 1 });
    }
  };
  try {
    await t.step("a second reservation waiting behind a first whose session is ended", () =>
      pool(1, async (sql) => {
        const first = await sql.reserve();
        const pid = await pidOf(first);
        const second = sql.reserve();
        await end(pid);
        await assert.rejects(answered("a statement of the ended reservation", pidOf(first)), unreachable);
        first.release();
        await served("the second reservation", second, pid);
        assert.equal(await next(sql), 8);
      }));

    await t.step(
      "a reservation waiting while a statement of the pool has its session ended",
      () =>
        pool(1, async (sql) => {
          const pid = await pidOf(sql);
          const statement = assert.rejects(
            answered("the ended statement", sql`select pg_sleep(5)`.execute()),
            unreachable,
          );
          // the statement holds the pool's one connection before the reservation asks for it
          await answered("the statement to start", running(pid));
          const waiting = sql.reserve();
          await end(pid);
          await statement;
          await served("the waiting reservation", waiting, pid);
          assert.equal(await next(sql), 8);
        }),
    );

    await t.step("several reservations waiting, each served in turn", () =>
      pool(1, async (sql) => {
        const first = await sql.reserve();
        const pid = await pidOf(first);
        const waiting = [sql.reserve(), sql.reserve(), sql.reserve()];
        // when the step fails, ending its pool rejects the reservations still waiting: that is the step's failure
        for (const reservation of waiting) reservation.catch(() => {});
        await end(pid);
        first.release();
        for (const [i, reservation] of waiting.entries()) {
          await served(`waiting reservation ${i + 1}`, reservation, pid);
        }
        assert.equal(await next(sql), 8);
      }));

    await t.step("a pool of two, both reserved, a third waiting", () =>
      pool(2, async (sql) => {
        const [first, second] = [await sql.reserve(), await sql.reserve()];
        const pid = await pidOf(first);
        assert.notEqual(await pidOf(second), pid);
        const third = sql.reserve();
        await end(pid);
        await served("the third reservation", third, pid);
        first.release();
        second.release();
        assert.deepEqual(await answered("two statements at once", Promise.all([next(sql), next(sql)])), [8, 8]);
      }));

    await t.step(
      "a reservation waiting when the reconnect is refused fails, and the pool serves once it is let in",
      () =>
        pool(1, async (sql) => {
          // passes as published too: it holds that a reservation the reconnect was for fails with it, never waits on. The
          // database's own sessions cannot close it to new ones: a session on another database does
          const server = new URL(url);
          server.pathname = "/postgres";
          const outside = connect(server.toString(), { max: 1 });
          const name = new URL(url).pathname.slice(1);
          try {
            const first = await sql.reserve();
            const pid = await pidOf(first);
            const waiting = assert.rejects(answered("the waiting reservation", sql.reserve()), (err: unknown) => {
              assert.equal((err as { code?: string }).code, "55000", `the server refused the session: ${err}`);
              return true;
            });
            await outside`alter database ${outside(name)} allow_connections false`;
            try {
              await end(pid);
              await waiting;
            } finally {
              await outside`alter database ${outside(name)} allow_connections true`;
            }
            first.release();
          } finally {
            await outside.end({ timeout: 1 });
          }
          assert.equal(await next(sql), 8);
        }),
    );

    await t.step("a reservation waiting when the pool is ended fails, and the pool's end is not held", async () => {
      // a second between a session's loss and its reconnect: the pool is ended inside it, with the reservation waiting
      const sql = postgres(url, { max: 1, backoff: () => 1, onnotice: () => {} });
      const first = await sql.reserve();
      const pid = await pidOf(first);
      const waiting = assert.rejects(answered("the waiting reservation", sql.reserve()), (err: unknown) => {
        assert.equal((err as { code?: string }).code, "CONNECTION_ENDED", String(err));
        return true;
      });
      await end(pid);
      await Promise.all([waiting, answered("the pool's end", sql.end())]);
    });

    // A pool that does not look up array types (the service's does) answers a reservation as soon as it connects.
    await t.step("without fetch_types, a first reservation and one waiting behind an ended session", async () => {
      const sql = postgres(url, { max: 1, fetch_types: false, onnotice: () => {} });
      try {
        const first = await answered("a first reservation", sql.reserve());
        const pid = await pidOf(first);
        const second = sql.reserve();
        await end(pid);
        first.release();
        await served("the second reservation", second, pid);
      } finally {
        await sql.end({ timeout: 1 });
      }
    });
  } finally {
    await admin.end({ timeout: 1 });
    await dropDatabase(url);
  }
});

Deno.test("a transaction meets a plan made stale by a column added", async (t) => {
  const url = await freshDatabase("driver_stale_plan");
  // one connection: the statement prepared before the column was added is the one the transaction meets after
  const sql = connect(url, { max: 1 });
  const admin = connect(url, { max: 1 });
  const read = (tx: Sql | TransactionSql) => tx<Record<string, unknown>[]>`select * from endpoints where n = ${1}`;
  try {
    await sql`create table endpoints (n int primary key)`;
    await sql`insert into endpoints values (1)`;
    let widen = 0;
    const addColumn = async () => {
      widen++;
      await admin.unsafe(`alter table endpoints add column c${widen} int not null default ${widen}`);
    };

    await t.step("sql.begin runs the transaction again and reads the new column", async () => {
      await sql.begin((tx) => read(tx));
      await addColumn();
      let runs = 0;
      const rows = await answered("the transaction", sql.begin(async (tx) => (runs++, await read(tx))));
      assert.deepEqual([...rows], [{ n: 1, c1: 1 }]);
      assert.equal(runs, 2, "its first run met the stale plan and rolled back");
    });

    await t.step("the service's pipelined transaction does the same", async () => {
      await transaction(sql, (tx) => read(tx));
      await addColumn();
      const rows = await answered(
        "the transaction",
        transaction(sql, async (tx) => {
          const [row] = await read(tx);
          await tx`update endpoints set c1 = c1 + 1 where n = ${1}`;
          return row;
        }),
      );
      assert.deepEqual(rows, { n: 1, c1: 1, c2: 2 });
      // the update ran once: the first run was rolled back whole
      assert.deepEqual([...await sql`select c1 from endpoints`], [{ c1: 2 }]);
    });

    await t.step("any other failure is not run again", async () => {
      let runs = 0;
      await assert.rejects(
        sql.begin(async (tx) => (runs++, await tx`select * from no_such_table`)),
        (err: { code?: string }) => err.code === "42P01",
      );
      assert.equal(runs, 1);
    });
  } finally {
    await sql.end();
    await admin.end();
    await dropDatabase(url);
  }
});
