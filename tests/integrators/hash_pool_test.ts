/**
 * An anonymous flood of sign-ins from one address cannot take the password-hash pool from everyone else: that address
 * holds `SIGN_IN_HASH_PER_ADDRESS` places and is answered 429 with Retry-After past them, while a user at another
 * address signs in (docs/limits.md, "What an anonymous request can grow").
 */
import assert from "node:assert/strict";
import { createUser } from "../../domain/integrators/users.ts";
import { setup } from "../support/helpers.ts";

Deno.test("a flood of sign-ins from one address leaves the hash pool to the others", async () => {
  const ctx = await setup("hash_pool_share", {
    env: {
      TRUST_PROXY_HOPS: "1", // the addresses are the ones the (trusted) proxy writes
      SIGN_IN_HASH_CONCURRENCY: "1",
      SIGN_IN_HASH_QUEUE: "4",
      SIGN_IN_HASH_PER_ADDRESS: "2",
      SIGN_IN_FAILURES_PER_ADDRESS: "100000",
    },
  });
  try {
    const made = await createUser(ctx.sql, { companyId: crypto.randomUUID(), username: "vera.victim" });
    assert.ok("password" in made);
    const signIn = async (username: string, password: string, address: string) => {
      const res = await ctx.app.request("/api/v1/sign_in", {
        method: "POST",
        headers: { "content-type": "application/json", "x-forwarded-for": address },
        body: JSON.stringify({ user: { username, password } }),
      });
      return { status: res.status, body: await res.json(), retryAfter: res.headers.get("retry-after") };
    };

    // the attacker keeps 12 sign-ins with made-up usernames in flight from one address, more than the whole pool
    const attacker: Awaited<ReturnType<typeof signIn>>[] = [];
    let flooding = true;
    let n = 0;
    const flood = Promise.all(Array.from({ length: 12 }, async () => {
      while (flooding) {
        attacker.push(await signIn(`nobody-${n++}@flood.example`, "guess", "203.0.113.66"));
        // a refusal costs no I/O: without a turn of the event loop, this loop would be all the process did
        await new Promise((r) => setTimeout(r, 0));
      }
    }));
    try {
      await new Promise((r) => setTimeout(r, 200)); // the flood is under way
      for (let i = 0; i < 5; i++) {
        const victim = await signIn("vera.victim", made.password, "192.0.2.10");
        assert.equal(victim.status, 200, `the victim's sign-in ${i + 1}: ${JSON.stringify(victim.body)}`);
      }
    } finally {
      flooding = false;
      await flood;
    }
    const statuses = Object.groupBy(attacker, (a) => String(a.status));
    assert.deepEqual(Object.keys(statuses).sort(), ["401", "429"], `the attacker's answers: ${Object.keys(statuses)}`);
    const refused = statuses["429"]!;
    assert.ok(refused.length > attacker.length / 2, `${refused.length} of ${attacker.length} refused`);
    assert.ok(refused.every((a) => a.retryAfter === "1"));
    assert.deepEqual(refused[0].body, {
      errors: {
        detail: "Too many sign-ins from this address are being checked right now: try again after Retry-After",
      },
    });
  } finally {
    await ctx.close();
  }
});
