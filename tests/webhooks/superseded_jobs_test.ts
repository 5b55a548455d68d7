import assert from "node:assert/strict";
import { setup } from "../support/helpers.ts";

Deno.test("a stopped worker's jobs go back to the queue, except drain jobs a newer one superseded", async () => {
  const ctx = await setup("superseded_jobs");
  const sql = ctx.sql;
  try {
    const add = (key: string) => sql`select graphile_worker.add_job('deliver_webhook', '{}'::json, job_key := ${key})`;
    const lockBy = (key: string, worker: string) =>
      sql`update graphile_worker._private_jobs set locked_at = now(), locked_by = ${worker} where key = ${key}`;
    await add("deliver:a:0");
    await add("deliver:b:0");
    await lockBy("deliver:a:0", "stopped-worker");
    await lockBy("deliver:b:0", "stopped-worker");
    // woken again while it runs: graphile-worker clears the running job's key, spends its attempts, adds a new one
    await add("deliver:a:0");
    const [superseded] =
      await sql`select id from graphile_worker.jobs where key is null and locked_by = 'stopped-worker'`;
    assert.ok(superseded, "graphile-worker superseded the running job");

    await sql`select hand_back_worker_jobs(array['stopped-worker'])`;

    const jobs = await sql<{ key: string | null; locked: boolean; runnable: boolean }[]>`
      select key, locked_at is not null as locked, attempts < max_attempts as runnable
      from graphile_worker.jobs order by key`;
    assert.deepEqual([...jobs], [
      { key: "deliver:a:0", locked: false, runnable: true },
      { key: "deliver:b:0", locked: false, runnable: true },
    ]);
  } finally {
    await ctx.close();
  }
});
