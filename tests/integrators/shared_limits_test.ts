/**
 * Limits, throttles and sessions with two instances on one database and across a restart, and a flood of sign-ins:
 * what every instance must count the same. Kept apart because it runs the service as processes.
 */
import assert from "node:assert/strict";
import { createUser } from "../../domain/integrators/users.ts";
import { connect } from "../../domain/infra/db.ts";
import { dropDatabase, eventually, migratedDatabase } from "../support/helpers.ts";
import { httpCompany, type ServiceProcess, startService } from "../support/service_process.ts";

/** Peak resident memory of a process so far (VmHWM), in MiB; read by `cat`, since /proc wants --allow-all. */
async function peakRssMiB(pid: number): Promise<number> {
  const out = await new Deno.Command("cat", { args: [`/proc/${pid}/status`], stdout: "piped" }).output();
  const status = new TextDecoder().decode(out.stdout);
  return Number(/VmHWM:\s+(\d+) kB/.exec(status)![1]) / 1024;
}

async function signIn(base: string, username: string, password: string) {
  const res = await fetch(`${base}/api/v1/sign_in`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ user: { username, password } }),
  });
  const body = await res.json();
  return { status: res.status, jwt: body.jwt as string | undefined, retryAfter: res.headers.get("retry-after") };
}

const count = (statuses: number[]) =>
  statuses.reduce<Record<number, number>>((n, s) => ({ ...n, [s]: (n[s] ?? 0) + 1 }), {});

// a rate this slow refills nothing during the test: what is admitted is the burst, shared or not
const LIMITS = {
  RATE_LIMIT_PER_SECOND: "0.01",
  RATE_LIMIT_BURST: "200",
  SIGN_IN_FAILURES_PER_ADDRESS: "100000",
};

Deno.test("limits, throttles and sessions hold across instances and restarts", async (t) => {
  const url = await migratedDatabase("shared_limits");
  const sql = connect(url, { max: 2 });
  const services: ServiceProcess[] = [];
  try {
    const [a, b] = await Promise.all([startService(url, LIMITS), startService(url, LIMITS)]);
    services.push(a, b);
    const company = await httpCompany();

    await t.step("600 requests at once through two instances: one company's burst of 200, not 400", async () => {
      const statuses = await Promise.all(
        Array.from(
          { length: 600 },
          (_, i) => company.call([a, b][i % 2].base, "GET", "/api/v1/subject/people").then((r) => r.status),
        ),
      );
      const n = count(statuses);
      assert.deepEqual(Object.keys(n).sort(), ["200", "429"]);
      // within 10% of the burst: each instance may hold one batch (4 tokens) it has not spent
      assert.ok(n[200] >= 180 && n[200] <= 200, `${n[200]} admitted`);
    });

    await t.step("a restart forgets nothing: a new instance finds the company's bucket empty", async () => {
      await a.stop();
      services.splice(services.indexOf(a), 1);
      const c = await startService(url, LIMITS);
      services.push(c);
      const res = await fetch(`${c.base}/api/v1/subject/people`, {
        headers: { authorization: `Bearer ${company.token}` },
      });
      await res.body?.cancel();
      assert.equal(res.status, 429);
      assert.ok(Number(res.headers.get("retry-after")) >= 1);
    });

    const [, c] = services;
    const made = await createUser(sql, { companyId: crypto.randomUUID(), username: "hana.shared" });
    assert.ok("password" in made);

    await t.step("failed sign-ins are counted once for all instances", async () => {
      for (let i = 0; i < 10; i++) {
        assert.equal((await signIn([b, c][i % 2].base, "hana.shared", `guess-${i}`)).status, 401);
      }
      for (const instance of [b, c]) {
        const res = await signIn(instance.base, "hana.shared", made.password);
        assert.equal(res.status, 429, "the eleventh try waits, whichever instance it reaches");
      }
    });

    await t.step("a session ended on one instance is ended on the other", async () => {
      const other = await createUser(sql, { companyId: crypto.randomUUID(), username: "ivo.shared" });
      assert.ok("password" in other);
      const { jwt } = await signIn(b.base, "ivo.shared", other.password);
      const on = async (instance: ServiceProcess, method = "GET", path = "/api/v1/subject/people") => {
        const res = await fetch(`${instance.base}${path}`, { method, headers: { authorization: `Bearer ${jwt}` } });
        await res.body?.cancel();
        return res.status;
      };
      assert.equal(await on(c), 200);
      assert.equal(await on(b, "POST", "/api/v1/sign_out"), 204);
      await eventually("the other instance to refuse the token", async () => (await on(c)) === 401, 1000, 5);
    });
  } finally {
    await Promise.all(services.map((s) => s.kill()));
    await sql.end();
    await dropDatabase(url);
  }
});

Deno.test("a flood of sign-ins costs bounded memory and counts every guess", async (t) => {
  const url = await migratedDatabase("sign_in_flood");
  const sql = connect(url, { max: 2 });
  // one address sends all: its share of the hash pool out of the way (tests/integrators/hash_pool_test.ts)
  const service = await startService(url, {
    SIGN_IN_FAILURES_PER_ADDRESS: "100000",
    SIGN_IN_HASH_PER_ADDRESS: "100000",
  });
  try {
    const made = await createUser(sql, { companyId: crypto.randomUUID(), username: "jade.flood" });
    assert.ok("password" in made);
    const before = await peakRssMiB(service.child.pid);

    await t.step("60 wrong passwords at once for one username: 10 answer 401, the other 50 answer 429", async () => {
      const answers = await Promise.all(
        Array.from({ length: 60 }, (_, i) => signIn(service.base, "jade.flood", `guess-${i}`)),
      );
      assert.deepEqual(count(answers.map((a) => a.status)), { 401: 10, 429: 50 });
      assert.ok(answers.filter((a) => a.status === 429).every((a) => Number(a.retryAfter) > 800));
      assert.equal((await signIn(service.base, "jade.flood", made.password)).status, 429);
    });

    await t.step("100 sign-ins at once with unknown usernames: a few hashes at a time, the rest 503", async () => {
      const answers = await Promise.all(
        Array.from({ length: 100 }, (_, i) => signIn(service.base, `nobody-${i}@flood.example`, "guess")),
      );
      const n = count(answers.map((a) => a.status));
      assert.deepEqual(Object.keys(n).sort(), ["401", "503"]);
      // two hashing and sixteen waiting (the defaults); a hash that ends before the last requests arrive lets a few
      // more in, on a slow machine: the rest is turned away before any work
      assert.ok(n[401] >= 18 && n[503] >= 50, JSON.stringify(n));
      assert.ok(answers.filter((a) => a.status === 503).every((a) => a.retryAfter === "1"));
      const peak = await peakRssMiB(service.child.pid);
      console.log(`peak RSS ${before.toFixed(0)} MiB before the flood, ${peak.toFixed(0)} MiB after`);
      // each running scrypt holds 32 MiB; unbounded, 100 of them took the process past 1 GiB
      assert.ok(peak - before < 160, `peak RSS grew by ${(peak - before).toFixed(0)} MiB`);
    });
  } finally {
    await service.kill();
    await sql.end();
    await dropDatabase(url);
  }
});
