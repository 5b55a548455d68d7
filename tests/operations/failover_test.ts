/**
 * The failover story on a real Postgres HA cluster (`deno task cluster`) with the service on it: a lost primary, its
 * rejoin, a planned switchover and a restore rehearsal, with deliveries under way. Ignored where a cluster cannot run.
 */
import assert from "node:assert/strict";
import postgres from "postgres";
import { parseBackupInfo } from "../../commands/cluster/backups.ts";
import { parseStatus, primaryOf } from "../../commands/cluster/status.ts";
import { verifySignature } from "../../domain/webhooks/endpoints/signature.ts";
import { clusterDir, clusterStatus, clusterTask, clusterUnavailable, processesIn } from "../support/cluster.ts";
import { eventually } from "../support/helpers.ts";
import { httpCompany, type ServiceProcess, startService } from "../support/service_process.ts";
import { type Arrival, sleep, startReceiver } from "../support/webhook_receiver.ts";
import { createEndpointAt } from "../support/endpoints.ts";

const whyNot = await clusterUnavailable();
if (whyNot) console.warn(`failover_test: ignored: ${whyNot}`);

/**
 * A pull stream's consumer through the failovers (docs/webhooks.md, "Pull streams"): long polls from its last cursor
 * through either instance, acknowledging each page it read; what it read, by transaction id, and in which order. An
 * error or a 503 while there is no primary is retried from the same cursor, as a consumer would.
 */
function streamConsumer(company: Company, instances: ServiceProcess[], streamId: string) {
  const read: string[] = [];
  let cursor: string | null = null;
  let running = true;
  const path = `/api/v2/notifications/streams/${streamId}`;
  const done = (async () => {
    for (let i = 0; running; i++) {
      const base = instances[i % instances.length].base;
      const query: string = cursor ? `?wait=1&after=${encodeURIComponent(cursor)}` : "?wait=1";
      const res: { status: number; body: { data: { body: string }[]; next_cursor: string } } = await company
        .call(base, "GET", `${path}/messages${query}`).catch(() => ({
          status: 0,
          body: { data: [], next_cursor: "" },
        }));
      if (res.status !== 200) {
        await sleep(100);
        continue;
      }
      for (const m of res.body.data) read.push(JSON.parse(m.body).data?.transaction_id);
      cursor = res.body.next_cursor;
      if (res.body.data.length) {
        await company.call(base, "POST", `${path}/ack`, { cursor }).catch(() => {});
      }
    }
  })();
  return {
    read,
    stop: async () => {
      running = false;
      await done;
    },
  };
}

/** Pay-ins accepted before the primary goes, and after writes resume. */
const BEFORE = 10;
const AFTER = 10;
/** The issue's bound: writes accepted again within this long of losing the primary. */
const RESUME_WITHIN_S = 15;
/**
 * Issue 33's bound, counted from the first write accepted again: no event waits longer than this past the new primary
 * for its sequential delivery (an event pending at the loss waits for the new primary in any case, and how long there
 * is none is bounded by RESUME_WITHIN_S; docs/production.md, "Leases whose claim went unanswered").
 */
const LAG_PAST_RESUME_S = 5;

type Company = Awaited<ReturnType<typeof httpCompany>>;

const seconds = (since: number) => (performance.now() - since) / 1000;

/** `work` on a connection of its own to `url`, closed after. */
async function onCluster(url: string, work: (sql: postgres.Sql) => Promise<void>) {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    await work(sql);
  } finally {
    await sql.end({ timeout: 1 });
  }
}
type PayIn = { id: string; sentAt: number; answeredAt: number };

/**
 * Card pay-ins one after the other, alternating the two instances, until `stop()`: what answered 201 (in the order
 * the events were written), and every other answer, which may only be a 503 while there is no primary.
 */
function payInStream(company: Company, instances: ServiceProcess[], subjectId: string) {
  const accepted: PayIn[] = [];
  const refused: number[] = [];
  const unexpected: string[] = [];
  let running = true;
  const done = (async () => {
    for (let i = 0; running; i++) {
      const sentAt = performance.now();
      const res = await company.call(instances[i % instances.length].base, "POST", "/api/sandbox/card_payments", {
        subject_id: subjectId,
        value: "10.00",
        currency: "BRL",
        outcome: "approved",
      }).catch((err) => ({ status: 0, body: String(err) }));
      if (res.status === 201) accepted.push({ id: res.body.data.id, sentAt, answeredAt: performance.now() });
      else if (res.status === 503) refused.push(res.status);
      else unexpected.push(`${res.status} ${JSON.stringify(res.body)}`);
      if (res.status !== 201) await sleep(50);
    }
  })();
  return {
    accepted,
    refused,
    unexpected,
    stop: async () => {
      running = false;
      await done;
    },
  };
}

/** Delivery record ids are UUIDv7, made when the event was emitted: their first 48 bits are that instant in ms. */
const emittedAt = (uuidV7: string) => parseInt(uuidV7.slice(0, 8) + uuidV7.slice(9, 13), 16);

/**
 * The longest time from an event to its first arrival at `path`, over the records that first arrived at or after
 * `sinceMs` (wall clock): how long a lane waited once the primary was lost, whatever the event (docs/operations.md).
 */
function longestLag(receiver: ReturnType<typeof startReceiver>, path: string, sinceMs: number): number {
  const first = new Map<string, number>();
  for (const a of receiver.at(path)) {
    const id: string | undefined = a.body?.id;
    if (id && !first.has(id)) first.set(id, a.receivedAt);
  }
  const lags = [...first].filter(([, at]) => at >= sinceMs).map(([id, at]) => at - emittedAt(id));
  return Math.max(0, ...lags) / 1000;
}

/** Pay-ins (transaction ids) as they arrived at `path`, signatures checked, repeats next to each other merged. */
function arrivalOrder(receiver: ReturnType<typeof startReceiver>, path: string): string[] {
  const order: string[] = [];
  for (const a of receiver.at(path)) {
    const tx: string = a.body?.data?.transaction_id;
    if (order.at(-1) !== tx) order.push(tx);
  }
  return order;
}

Deno.test({
  name: `the service on a local HA cluster: start, back up, lose the primary and switch over under two instances ` +
    `(nothing acknowledged lost), restore a past time, stop${whyNot ? ` (ignored: ${whyNot})` : ""}`,
  ignore: whyNot !== null,
  fn: async (t) => {
    const dir = await clusterDir();
    // a restore rehearsal outside the cluster's directory (`--into`): `stop` must find it all the same
    const scratch = `${dir}-rehearsal`;
    const secrets = new Map<string, string>();
    const badSignatures: string[] = [];
    /** The sequential endpoint's records in flight at the receiver, and each arrival that found one there. */
    const sequentialInFlight = new Set<string>();
    const overlaps: { record: string; at: number; with: string[] }[] = [];
    /**
     * Each overlap, with every arrival (wall clock, ms) of the records it names: which of them came twice, and when,
     * tells a record sent again beside itself from a later record sent ahead of an earlier one.
     */
    const describeOverlaps = () =>
      overlaps.map((o) => {
        const arrivals = [o.record, ...o.with].map((id) =>
          `${id} at ${receiver.at("/sequential").filter((a) => a.body?.id === id).map((a) => a.receivedAt)}`
        );
        return `${o.record} arrived at ${o.at} while ${o.with} was in flight (arrivals: ${arrivals.join(", ")})`;
      }).join("; ");
    const receiver = startReceiver(async (arrival) => {
      const record = arrival.path === "/sequential" ? String(arrival.body?.id) : null;
      if (record && sequentialInFlight.size) {
        overlaps.push({ record, at: arrival.receivedAt, with: [...sequentialInFlight] });
      }
      if (record) sequentialInFlight.add(record);
      try {
        return await answer(arrival);
      } finally {
        if (record) sequentialInFlight.delete(record);
      }
    });
    const answer = async (arrival: Arrival) => {
      if (!(await verifySignature(arrival.raw, arrival.signature, secrets.get(arrival.path) ?? ""))) {
        badSignatures.push(arrival.path);
        return new Response("bad signature", { status: 400 });
      }
      await sleep(5);
      return new Response("ok");
    };
    const services: ServiceProcess[] = [];
    let sql: postgres.Sql | null = null;
    try {
      let clusterUrl = "";
      await t.step("start: the last line is a URL that takes writes; status lists every process", async () => {
        const since = performance.now();
        const started = await clusterTask("start", dir);
        assert.equal(started.code, 0, `${started.stdout}\n${started.stderr}`);
        console.log(`cluster: start to ready ${seconds(since).toFixed(1)} s (the command itself included)`);
        clusterUrl = started.lastLine;
        assert.match(
          clusterUrl,
          /^postgres:\/\/postgres:[0-9a-f]{64}@127\.0\.0\.1:[0-9]+\/postgres$/,
          "the generated password",
        );
        assert.notEqual(new URL(clusterUrl).port, "5432");
        const s = await clusterStatus(dir);
        assert.equal(s.members.length, 2);
        assert.equal(s.url, clusterUrl);
        assert.ok(primaryOf(s), JSON.stringify(s));
        for (const m of s.members) assert.equal(m.pids.length, 2, `${m.name}: its agent and its postmaster`);
        assert.ok(s.members.find((m) => m.role === "replica")?.sync, "the replica is the synchronous one");
        assert.equal(s.etcd.pids.length, 1);
        assert.equal(s.haproxy.pids.length, 1);
      });

      await t.step("nothing answers a local user without the generated passwords", async () => {
        const s = await clusterStatus(dir);
        // Postgres through HAProxy: the old fixed password, and none, are refused (no `trust` in pg_hba)
        for (const password of ["postgres", ""]) {
          const guess = new URL(clusterUrl);
          guess.password = password;
          await assert.rejects(
            onCluster(guess.toString(), async (admin) => void await admin`select 1`),
            /password/,
            `password ${JSON.stringify(password)}`,
          );
        }
        // Patroni's changes ask for the REST password; its reads stay open (HAProxy's check, `status`)
        const agent = `http://127.0.0.1:${s.members[0].api_port}`;
        for (
          const [method, path, body] of [["PATCH", "/config", { ttl: 3600 }], ["POST", "/switchover", {
            leader: "pg0",
          }]] as const
        ) {
          const res = await fetch(`${agent}${path}`, { method, body: JSON.stringify(body) });
          await res.body?.cancel();
          assert.equal(res.status, 401, `${method} ${path}`);
        }
        const read = await fetch(`${agent}/patroni`);
        await read.body?.cancel();
        assert.ok([200, 503].includes(read.status));
        // etcd reads and writes nothing without its root user's password
        const range = await fetch(`http://127.0.0.1:${s.etcd.port}/v3/kv/range`, {
          method: "POST",
          body: JSON.stringify({ key: btoa("/payments-cluster/"), range_end: btoa("/payments-cluster0") }),
        });
        const answer = await range.text();
        assert.ok(!range.ok && /user name is empty/.test(answer), answer);
        assert.equal((await Deno.stat(`${dir}/passwords.json`)).mode! & 0o777, 0o600);
        for (const m of s.members) assert.equal((await Deno.stat(`${dir}/${m.name}/patroni.yml`)).mode! & 0o777, 0o600);
      });

      await t.step("backup: a base backup of the primary, row A in it", async () => {
        await onCluster(clusterUrl, async (admin) => {
          await admin`create table pitr_story (note text not null)`;
          await admin`insert into pitr_story values ('A')`;
        });
        const since = performance.now();
        const out = await clusterTask("backup", dir);
        assert.equal(out.code, 0, `${out.stdout}\n${out.stderr}`);
        console.log(`cluster: base backup ${seconds(since).toFixed(1)} s (the command itself included)`);
        const path = out.lastLine;
        assert.match(path.slice(dir.length), /^\/backups\/[0-9]{8}T[0-9]{6}Z$/);
        const info = parseBackupInfo(await Deno.readTextFile(`${path}/backup.json`));
        assert.equal(info.member, primaryOf(await clusterStatus(dir))?.name);
        for (const file of ["base.tar.gz", "pg_wal.tar.gz", "backup_manifest"]) await Deno.stat(`${path}/${file}`);
      });

      const url = new URL(clusterUrl);
      url.pathname = "/payments_failover";
      sql = postgres(url.toString(), { max: 2, onnotice: () => {} });

      // one after the other: the first applies the migrations
      // at info, to count the leases given back when a worker's liveness session opens again
      const env = { WORKER_CONCURRENCY: "4", LOG_LEVEL: "info" };
      services.push(await startService(url.toString(), env, { readyTimeoutMs: 60_000, logs: true }));
      services.push(await startService(url.toString(), env, { readyTimeoutMs: 60_000, logs: true }));
      const exited = services.map(() => false);
      services.forEach((s, i) => s.child.status.then(() => exited[i] = true));
      const [a, b] = services;

      /**
       * How often the instances' liveness sessions opened again and how many endpoints' leases they gave back then,
       * so far; a release that failed or was skipped logs a warning, which the story does not expect.
       */
      const givenBack = () => {
        const lines = services.flatMap((s) => s.logs());
        const reopened = lines.filter((l) => l.msg === "worker liveness session open again").length;
        const endpoints = lines.filter((l) =>
          l.msg === "webhook leases given back after the liveness session opened again"
        )
          .reduce((n, l) => n + Number(l.endpoints), 0);
        const failed = lines.filter((l) => /webhook leases/.test(String(l.msg)) && l.level === "warn");
        assert.deepEqual(failed, [], "every release after a session opened again ran");
        return `${endpoints} (sessions opened again: ${reopened})`;
      };

      const company = await httpCompany();
      for (
        const [path, settings] of [["/sequential", { delivery_mode: "sequential" }], ["/parallel", {
          max_concurrency: 3,
        }]] as const
      ) {
        const made = await createEndpointAt(company, a.base, `${receiver.url}${path}`, settings);
        secrets.set(path, made.secret);
      }
      const streamMade = await company.call(a.base, "POST", "/api/v2/notifications/streams", {});
      assert.equal(streamMade.status, 201, JSON.stringify(streamMade.body));
      const consumer = streamConsumer(company, services, streamMade.body.data.id);
      const person = await company.call(b.base, "POST", "/api/v1/subject/people", {
        person: { document_number: "52998224725", document_type: "cpf", social_name: "Ana", fiscal_country: "BRA" },
      });
      assert.equal(person.status, 201, JSON.stringify(person.body));

      /**
       * A stream of pay-ins through both instances while `disrupt` takes the primary away; `disrupt` resolves with
       * the instant the primary was gone (or the change began). Reports the time to the first pay-in accepted that
       * was sent after that instant, and the longest time between two accepted pay-ins: the time without a primary.
       */
      const ride = async (what: string, disrupt: () => Promise<number>) => {
        const stream = payInStream(company, services, person.body.data.id);
        try {
          await eventually(`${BEFORE} pay-ins accepted`, () => stream.accepted.length >= BEFORE, 30_000, 10);
          const lostAt = await disrupt();
          const first = await eventually(
            "a pay-in accepted after the primary went",
            () => stream.accepted.find((p) => p.sentAt > lostAt),
            30_000,
            20,
          );
          const count = stream.accepted.length;
          await eventually(`${AFTER} more pay-ins accepted`, () => stream.accepted.length >= count + AFTER, 30_000, 10);
          await stream.stop();
          const resumedS = (first.answeredAt - lostAt) / 1000;
          const gaps = stream.accepted.slice(1).map((p, i) => p.answeredAt - stream.accepted[i].answeredAt);
          const withoutS = Math.max(...gaps) / 1000;
          console.log(
            `${what}: first write accepted ${resumedS.toFixed(1)} s after; longest time without an accepted write ` +
              `${withoutS.toFixed(1)} s; ${stream.refused.length} answered 503; ${stream.accepted.length} accepted`,
          );
          assert.deepEqual(stream.unexpected, [], "every answer was 201, or 503 while there was no primary");
          assert.ok(resumedS <= RESUME_WITHIN_S, `writes resumed after ${resumedS.toFixed(1)} s`);
          return { accepted: stream.accepted, resumedS };
        } finally {
          await stream.stop();
        }
      };

      /** Every pay-in that answered 201 is stored with its two delivery records and arrives at both receivers. */
      const nothingLost = async (accepted: PayIn[]) => {
        const ids = accepted.map((p) => p.id);
        const rows = await sql!<{ id: string; records: number }[]>`
          select t.id, (select count(*)::int from webhook_deliveries d join events e on e.id = d.event_id
                        where e.data->>'transaction_id' = t.id::text) as records
          from transactions t where t.id = any(${ids}::uuid[])`;
        assert.equal(rows.length, ids.length, "every acknowledged pay-in is in the database");
        assert.ok(rows.every((r) => r.records >= 2), "each with a delivery record per endpoint");
        await eventually(
          "every acknowledged pay-in delivered to both endpoints",
          () =>
            ["/sequential", "/parallel"].every((path) => {
              const got = new Set(receiver.at(path).map((x) => x.body?.data?.transaction_id));
              return ids.every((id) => got.has(id));
            }),
          60_000,
          100,
        );
        // at least once: an attempt cut off before its outcome was stored is sent again, so at most those in flight
        const twice = Object.fromEntries(["/sequential", "/parallel"].map((path) => {
          const seen = receiver.at(path).map((x) => x.body?.data?.transaction_id).filter((tx) => ids.includes(tx));
          return [path, seen.length - new Set(seen).size];
        }));
        console.log(`delivered twice: ${JSON.stringify(twice)}`);
        // the stream's consumer read every acknowledged pay-in, none skipped by a cursor, in the order accepted
        await eventually(
          "every acknowledged pay-in read from the stream",
          () => {
            const got = new Set(consumer.read);
            return ids.every((id) => got.has(id));
          },
          30_000,
          100,
        );
        const position = new Map(ids.map((id, i) => [id, i]));
        // the order read is the order of the events' transactions; said, not held to the order the answers came in
        // (one clean-clone run read three pay-ins before the six accepted ahead of them, all of them read)
        const firsts = [...new Set(consumer.read.filter((tx) => position.has(tx)).map((tx) => position.get(tx)!))];
        const early = firsts.filter((p, i) => i > 0 && p < firsts[i - 1]).length;
        console.log(`stream: ${firsts.length} pay-ins read, ${early} read before one accepted ahead of it`);
        assert.ok(twice["/sequential"] <= 1 && twice["/parallel"] <= 3, JSON.stringify(twice));
      };

      /** The sequential endpoint got one at a time, in the order the pay-ins were acknowledged. */
      const inOrder = (accepted: PayIn[]) => {
        assert.equal(receiver.maxInFlight("/sequential"), 1, `never two deliveries at once: ${describeOverlaps()}`);
        const position = new Map(accepted.map((p, i) => [p.id, i]));
        const known = arrivalOrder(receiver, "/sequential").filter((tx) => position.has(tx));
        const positions = known.map((tx) => position.get(tx)!);
        assert.deepEqual(positions, [...positions].sort((x, y) => x - y), "in event order");
      };

      let first = "";
      await t.step("SIGKILL of every process of the primary's member mid-stream", async () => {
        const primary = primaryOf(await clusterStatus(dir));
        assert.ok(primary, "a primary");
        let lostAtMs = 0;
        const { accepted, resumedS } = await ride("failover", () => {
          for (const pid of primary.pids) Deno.kill(pid, "SIGKILL");
          lostAtMs = Date.now();
          return Promise.resolve(performance.now());
        });
        const s = await clusterStatus(dir);
        assert.notEqual(primaryOf(s)?.name, primary.name, JSON.stringify(s));
        const lost = s.members.find((m) => m.name === primary.name)!;
        assert.deepEqual([lost.pids, lost.state], [[], "down"]);
        first = primary.name;
        const since = performance.now();
        await nothingLost(accepted);
        console.log(
          `failover: every acknowledged pay-in delivered ${((performance.now() - since) / 1000).toFixed(1)} s later`,
        );
        // a claim that committed on the lost primary but whose answer was lost is freed when the worker's liveness
        // session opens again (docs/production.md, "Leases whose claim went unanswered"), not when its lease runs out
        const lagS = longestLag(receiver, "/sequential", lostAtMs);
        console.log(
          `failover: longest event → receipt lag on the sequential endpoint ${lagS.toFixed(1)} s; ` +
            `leases given back when a liveness session opened again: ${givenBack()}`,
        );
        inOrder(accepted);
        assert.ok(
          lagS < resumedS + LAG_PAST_RESUME_S,
          `an event waited ${lagS.toFixed(1)} s for the sequential endpoint, writes resumed after ${
            resumedS.toFixed(1)
          } s`,
        );
        assert.deepEqual(exited, [false, false], "both instances stayed up");
      });

      await t.step("start again: the old primary rejoins as the synchronous replica", async () => {
        const since = performance.now();
        const again = await clusterTask("start", dir);
        assert.equal(again.code, 0, `${again.stdout}\n${again.stderr}`);
        assert.equal(again.lastLine, clusterUrl);
        console.log(`cluster: resumed in ${seconds(since).toFixed(1)} s`);
        const old = (await clusterStatus(dir)).members.find((m) => m.name === first)!;
        assert.deepEqual([old.role, old.state, old.sync, old.pids.length], ["replica", "running", true, 2]);
      });

      await t.step("a planned switchover mid-stream", async () => {
        const before = primaryOf(await clusterStatus(dir))!.name;
        let after: ReturnType<typeof parseStatus> | null = null;
        let beganAtMs = 0;
        const { accepted } = await ride("switchover", async () => {
          const began = performance.now();
          beganAtMs = Date.now();
          const out = await clusterTask("switchover", dir);
          assert.equal(out.code, 0, `${out.stdout}\n${out.stderr}`);
          console.log(`cluster: switchover ${seconds(began).toFixed(1)} s (the command itself included)`);
          after = parseStatus(out.stdout);
          return began;
        });
        assert.notEqual(primaryOf(after!)?.name, before, "another member leads");
        // synchronous again a few seconds later (Patroni's own pace): the command does not wait for it
        const old = after!.members.find((m) => m.name === before)!;
        assert.deepEqual([old.role, old.state, old.pids.length], ["replica", "running", 2]);
        await nothingLost(accepted);
        const lagS = longestLag(receiver, "/sequential", beganAtMs);
        console.log(
          `switchover: longest event → receipt lag on the sequential endpoint ${lagS.toFixed(1)} s; ` +
            `leases given back when a liveness session opened again (both steps): ${givenBack()}`,
        );
        inOrder(accepted);
        assert.deepEqual(exited, [false, false], "both instances stayed up");
      });

      assert.deepEqual(badSignatures, [], "every delivery verified");

      await t.step("restore rehearsal at time T, two timelines after the backup: rows A and B, not C", async () => {
        let at = "";
        let segment = "";
        await onCluster(clusterUrl, async (admin) => {
          await admin`insert into pitr_story values ('B')`;
          [{ at }] = await admin`select to_char(clock_timestamp() at time zone 'UTC',
                                                'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as at`;
          await admin`insert into pitr_story values ('C')`;
          // recovery stops at the first commit after T (C's), which must be in the archive: close its segment
          [{ segment }] = await admin`select pg_walfile_name(pg_switch_wal()) as segment`;
        });
        const archived = () => Deno.stat(`${dir}/wal-archive/${segment}`).then(() => true, () => false);
        const waiting = performance.now();
        while (!await archived() && seconds(waiting) < 10) await sleep(100);
        assert.ok(await archived(), `${segment} archived within 10 s`);
        const since = performance.now();
        const out = await clusterTask("restore-rehearsal", dir, "--at", at, "--into", scratch);
        assert.equal(out.code, 0, `${out.stdout}\n${out.stderr}`);
        console.log(`cluster: restore rehearsal ${seconds(since).toFixed(1)} s (the command itself included)`);
        assert.match(out.stdout, /recovery stopping before commit/);
        assert.notEqual(new URL(out.lastLine).port, "5432");
        await onCluster(out.lastLine, async (copy) => {
          assert.deepEqual((await copy`select note from pitr_story order by note`).map((r) => r.note), ["A", "B"]);
          const [{ recovering }] = await copy`select pg_is_in_recovery() as recovering`;
          assert.equal(recovering, false, "promoted: it can be written to like the database at T");
        });
        assert.ok((await processesIn(scratch)).length > 0, "the rehearsal keeps running until stopped");
      });

      await t.step("stop: no process of the cluster is left; a second stop is harmless", async () => {
        await consumer.stop();
        await Promise.all(services.splice(0).map((s) => s.stop()));
        await sql?.end({ timeout: 1 });
        sql = null;
        const out = await clusterTask("stop", dir);
        assert.equal(out.code, 0, `${out.stdout}\n${out.stderr}`);
        assert.match(out.stdout, /stopped the restore rehearsal/);
        assert.deepEqual(await processesIn(dir), []);
        assert.deepEqual(await processesIn(scratch), []);
        const removed = await clusterTask("restore-rehearsal", dir, "--stop");
        assert.equal(removed.code, 0, removed.stderr);
        assert.equal(await Deno.stat(scratch).then(() => true, () => false), false, "--stop removes its folder");
        const again = await clusterTask("stop", dir);
        assert.equal(again.code, 0, again.stderr);
        assert.match(again.stdout, /nothing was running/);
      });
    } finally {
      await Promise.all(services.map((s) => s.kill()));
      await sql?.end({ timeout: 1 }).catch(() => {});
      await clusterTask("stop", dir);
      await receiver.close();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
      await Deno.remove(scratch, { recursive: true }).catch(() => {});
    }
  },
});
