/**
 * `transaction` (domain/infra/db.ts), the money path's transaction whose BEGIN goes out with the first statements and
 * whose COMMIT may go with the last (`commitNow`): it must keep every promise of `sql.begin` (all or nothing, one
 * snapshot of time, the connection handed back), and no statement of it may run outside it.
 */
import assert from "node:assert/strict";
import { commitNow, connect, isDatabaseUnreachable, transaction } from "../../domain/infra/db.ts";
import { dropDatabase, freshDatabase } from "../support/helpers.ts";

Deno.test("a transaction with its BEGIN pipelined commits all or nothing and hands its connection back", async (t) => {
  const url = await freshDatabase("pipelined_transaction");
  // one connection: a transaction that kept it would leave the next statement waiting forever
  const sql = connect(url, { max: 1 });
  const other = connect(url, { max: 1 });
  const rows = async () => (await other<{ n: number }[]>`select n from moves order by n`).map((r) => r.n);
  try {
    await sql`create table moves (n int primary key)`;

    await t.step("its first statement already runs inside the transaction", async () => {
      const [first, second] = await transaction(sql, async (tx) => {
        const [a] = await tx<{ at: Date; xact: string }[]>`select now() as at, txid_current()::text as xact`;
        await new Promise((r) => setTimeout(r, 20));
        const [b] = await tx<{ at: Date; xact: string }[]>`select now() as at, txid_current()::text as xact`;
        return [a, b];
      });
      assert.equal(second.xact, first.xact);
      assert.equal(second.at.getTime(), first.at.getTime());
    });

    await t.step("what it wrote is seen by others only once it returned", async () => {
      await transaction(sql, async (tx) => {
        await tx`insert into moves values (1)`;
        assert.deepEqual(await rows(), []);
      });
      assert.deepEqual(await rows(), [1]);
    });

    await t.step("a throw after a write leaves nothing, and the connection serves the next statement", async () => {
      await assert.rejects(
        transaction(sql, async (tx) => {
          await tx`insert into moves values (2)`;
          throw new Error("refused after writing");
        }),
        /refused after writing/,
      );
      assert.deepEqual(await rows(), [1]);
      const [{ n }] = await sql<{ n: number }[]>`select 7 as n`;
      assert.equal(n, 7);
    });

    await t.step("a statement failing in the first pipelined batch fails it whole", async () => {
      await assert.rejects(
        transaction(sql, async (tx) => {
          await Promise.all([tx`insert into moves values (3)`, tx`insert into moves values (1)`]);
        }),
        (err: { code?: string }) => err.code === "23505",
      );
      assert.deepEqual(await rows(), [1]);
      await transaction(sql, async (tx) => void await tx`insert into moves values (4)`);
      assert.deepEqual(await rows(), [1, 4]);
    });

    // a failover, as the service sees it: the server ends the transaction's session (docs/database-driver.md;
    // "The driver"); with max 1, a dead connection handed back would leave the last statement
    // of each step waiting forever, and the test would time out instead of failing
    const endSession = async (pid: number) => {
      await other`select pg_terminate_backend(${pid})`;
      // the close reaches the client a moment later
      await new Promise((r) => setTimeout(r, 100));
    };

    await t.step("a connection lost between two statements fails the transaction as unreachable", async () => {
      await assert.rejects(
        transaction(sql, async (tx) => {
          const [{ pid }] = await tx<{ pid: number }[]>`select pg_backend_pid() as pid`;
          await tx`insert into moves values (5)`;
          await endSession(pid);
          await tx`insert into moves values (6)`;
        }),
        (err: unknown) => isDatabaseUnreachable(err),
      );
      assert.deepEqual(await rows(), [1, 4]);
      const [{ n }] = await sql<{ n: number }[]>`select 8 as n`;
      assert.equal(n, 8);
    });

    await t.step(
      "a connection lost during a statement, or before COMMIT, leaves nothing and the pool serves on",
      async () => {
        await assert.rejects(
          transaction(sql, async (tx) => {
            const [{ pid }] = await tx<{ pid: number }[]>`select pg_backend_pid() as pid`;
            await Promise.all([tx`insert into moves values (7)`, tx`select pg_sleep(5)`, endSession(pid)]);
          }),
          (err: unknown) => isDatabaseUnreachable(err),
        );
        await assert.rejects(
          transaction(sql, async (tx) => {
            const [{ pid }] = await tx<{ pid: number }[]>`select pg_backend_pid() as pid`;
            await tx`insert into moves values (9)`;
            await endSession(pid);
          }),
          (err: unknown) => isDatabaseUnreachable(err),
        );
        assert.deepEqual(await rows(), [1, 4]);
        await transaction(sql, async (tx) => void await tx`insert into moves values (10)`);
        assert.deepEqual(await rows(), [1, 4, 10]);
      },
    );

    await t.step(
      "COMMIT queued with the last statements commits them, and a statement after it is refused",
      async () => {
        const [began, wrote] = await transaction(sql, async (tx) => {
          const [{ xact }] = await tx<{ xact: string }[]>`select txid_current()::text as xact`;
          const inserted = tx<{ xact: string }[]>`insert into moves values (11) returning txid_current()::text as xact`
            .execute();
          commitNow(tx);
          const [row] = await inserted;
          await assert.rejects(tx`insert into moves values (12)`, /outside its transaction/);
          return [xact, row.xact];
        });
        // the last statement ran in the transaction, before its COMMIT
        assert.equal(wrote, began);
        assert.deepEqual(await rows(), [1, 4, 10, 11]);
      },
    );

    await t.step("a last statement failing with COMMIT behind it leaves nothing", async () => {
      await assert.rejects(
        transaction(sql, async (tx) => {
          const first = tx`insert into moves values (13)`.execute();
          const again = tx`insert into moves values (11)`.execute();
          commitNow(tx);
          await Promise.all([first, again]);
        }),
        (err: { code?: string }) => err.code === "23505",
      );
      assert.deepEqual(await rows(), [1, 4, 10, 11]);
      const [{ n }] = await sql<{ n: number }[]>`select 14 as n`;
      assert.equal(n, 14);
    });

    await t.step("a failed BEGIN fails it whole: nothing runs, and the pool serves on", async () => {
      const [{ pid }] = await sql<{ pid: number }[]>`select pg_backend_pid() as pid`;
      // ended from another process, waiting for the end without giving the event loop a turn: the client has not
      // read the close yet, and BEGIN goes to a session that is gone
      const ended = new Deno.Command("psql", {
        args: [url, "-tAc", `select pg_terminate_backend(${pid}, 5000)`],
        stdout: "piped",
      }).outputSync();
      assert.equal(new TextDecoder().decode(ended.stdout).trim(), "t");
      let refused = 0;
      await assert.rejects(
        transaction(sql, async (tx) => {
          await tx`insert into moves values (15)`.catch(() => refused++);
          await tx`insert into moves values (16)`.catch(() => refused++);
        }),
        (err: unknown) => isDatabaseUnreachable(err),
      );
      assert.equal(refused, 2);
      assert.deepEqual(await rows(), [1, 4, 10, 11]);
      await transaction(sql, async (tx) => void await tx`insert into moves values (17)`);
      assert.deepEqual(await rows(), [1, 4, 10, 11, 17]);
    });

    await t.step("a statement that failed unawaited is not reported as committed", async () => {
      await assert.rejects(
        transaction(sql, async (tx) => {
          tx`insert into moves values (1)`.execute().catch(() => {});
          await new Promise((r) => setTimeout(r, 50));
        }),
        /ROLLBACK/,
      );
      assert.deepEqual(await rows(), [1, 4, 10, 11, 17]);
    });
  } finally {
    await sql.end();
    await other.end();
    await dropDatabase(url);
  }
});
