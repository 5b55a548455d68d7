/**
 * `deno task listen` as a developer runs it (docs/webhooks.md, "Listening locally"): the service and the command as
 * processes of their own, events forwarded to a local URL that verifies each signature with the secret the command
 * printed, every event once and in order across a restart of the service, a local URL that answers 500 retried and
 * then skipped, Ctrl-C, and `--cleanup` deleting the stream.
 */
import assert from "node:assert/strict";
import { Webhook } from "standardwebhooks";
import { emitEvent } from "../../domain/webhooks/outbox/events.ts";
import { connect } from "../../domain/infra/db.ts";
import { developmentCompanyId } from "../../domain/infra/local_secrets.ts";
import { setLogLevel } from "../../domain/basics/log.ts";
import { dropDatabase, eventually, freshDatabase, TEST_JWT_SECRET, TEST_TOKENS } from "../support/helpers.ts";
import { signToken } from "../../domain/integrators/tokens.ts";
import { httpCompany, runTask, startService } from "../support/service_process.ts";
import { seqId, seqOf } from "../support/webhook_receiver.ts";
import { killTree } from "../support/process_tree.ts";

const root = new URL("../..", import.meta.url).pathname;
const STREAMS = "/api/v2/notifications/streams";
const LINE = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ identified [0-9a-f-]{36} -> (\d{3}) in \d+ ms/;

Deno.test("deno task listen forwards every event once, in order, verified, across a restart", async (t) => {
  setLogLevel("silent");
  const url = await freshDatabase("listen_command");
  let service = await startService(url);
  const port = Number(new URL(service.base).port);
  const sql = connect(url, { max: 2 });
  // the development company of this checkout: the one a token signed from the local secret names
  const company = await httpCompany(
    await developmentCompanyId(`${root}.data/secrets`) as ReturnType<typeof crypto.randomUUID>,
  );
  const env = {
    DATABASE_URL: url,
    HOST: "127.0.0.1",
    PORT: String(port),
    JWT_SECRET: TEST_JWT_SECRET,
    LOG_LEVEL: "error",
  };

  // the local URL: verifies each signature with the secret the command printed; answers 500 to the seqs in `refuse`
  let secret = "";
  const verified: number[] = [];
  const tries = new Map<number, number>();
  const refuse = new Set<number>();
  let badSignatures = 0;
  const receiver = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    const body = await req.text();
    let seq: number;
    try {
      const event = new Webhook(secret, { format: "raw" }).verify(body, Object.fromEntries(req.headers)) as {
        data: { transaction_id: string };
      };
      seq = seqOf(event.data.transaction_id);
    } catch {
      badSignatures++;
      return new Response("bad signature", { status: 400 });
    }
    if (req.headers.get("content-type") !== "application/json") return new Response("type", { status: 415 });
    tries.set(seq, (tries.get(seq) ?? 0) + 1);
    if (refuse.has(seq)) return new Response("boom", { status: 500 });
    verified.push(seq);
    return new Response(null, { status: 204 });
  });
  const hooks = `http://127.0.0.1:${receiver.addr.port}/hooks`;

  let signedIn = null as Listener | null; // set by a step
  const listen = startListen(["--forward-to", hooks, "--events", "identified"], env);
  const out = listen.out;
  const emit = (from: number, to: number) =>
    sql.begin(async (tx) => {
      for (let seq = from; seq <= to; seq++) {
        await emitEvent(tx, company.id, "identified", { transaction_id: seqId(seq) });
      }
    });
  const upTo = (n: number) => Array.from({ length: n }, (_, i) => i + 1);
  const show = listen.show;

  try {
    await t.step("it makes the machine's stream and prints its secret", async () => {
      const line = await eventually("the secret line", () => {
        if (listen.exited()) throw new Error(`listen exited:\n${show()}`);
        return out.find((l) => l.startsWith("listen: secret "));
      }, 15_000);
      secret = line.slice("listen: secret ".length);
      assert.match(secret, /^[0-9a-f]{64}$/);
      assert.ok(out.some((l) => l.includes('new Webhook(secret, { format: "raw" })')), show());
      const streams = (await company.call(service.base, "GET", STREAMS)).body.data;
      assert.equal(streams.length, 1);
      assert.deepEqual([streams[0].kind, streams[0].name, streams[0].enabled_events], [
        "listen",
        Deno.hostname(),
        ["identified"],
      ]);
      assert.equal(streams[0].secret, secret);
    });

    await t.step("each event reaches the local URL verified, one line each, acknowledged", async () => {
      await emit(1, 4);
      await sql.begin((tx) => emitEvent(tx, company.id, "wire_created", { id: "w" })); // not subscribed
      await eventually("events 1-4", () => verified.length >= 4, 10_000);
      assert.deepEqual(verified, upTo(4));
      // a line is printed once the local URL's answer is read, a moment after the receiver counted the event
      const lines = await eventually("four lines", () => {
        const found = out.filter((l) => LINE.test(l));
        return found.length >= 4 ? found : null;
      }, 5_000);
      assert.deepEqual(lines.map((l) => l.match(LINE)![1]), ["204", "204", "204", "204"], show());
      const stream = (await company.call(service.base, "GET", STREAMS)).body.data[0];
      await eventually("the last one acknowledged", async () => {
        const rest = await company.call(service.base, "GET", `${STREAMS}/${stream.id}/messages`);
        return rest.body.data.length === 0;
      });
    });

    await t.step("a restart of the service: it reconnects from its cursor, nothing lost or repeated", async () => {
      await service.stop();
      await emit(5, 7); // while the service is down
      service = await startService(url, {}, { port });
      await emit(8, 10);
      await eventually("events 5-10", () => verified.length >= 10, 15_000);
      await new Promise((r) => setTimeout(r, 300)); // a repeat would arrive by now
      assert.deepEqual(verified, upTo(10));
      assert.ok(out.some((l) => l.includes("reconnecting from cursor")), show());
      assert.ok(out.some((l) => l === "listen: reconnected"), show());
    });

    await t.step("a service killed: one line while it waits, then every event once", async () => {
      const waits = () => out.filter((l) => l.includes("reconnecting from cursor")).length;
      const before = waits();
      await service.kill();
      await emit(11, 12);
      await new Promise((r) => setTimeout(r, 700)); // a few tries fail meanwhile
      service = await startService(url, {}, { port });
      await eventually("events 11-12", () => verified.length >= 12, 15_000);
      await new Promise((r) => setTimeout(r, 300));
      assert.deepEqual(verified, upTo(12));
      assert.equal(waits(), before + 1, show());
    });

    await t.step(
      "a local URL answering 500 is retried, then skipped with its line; the next event arrives",
      async () => {
        refuse.add(13);
        await emit(13, 14);
        await eventually("event 14", () => verified.includes(14), 10_000);
        assert.deepEqual(verified, [...upTo(12), 14]);
        assert.equal(tries.get(13), 4, "the first try and 3 retries");
        const skipped = out.find((l) => l.includes("skipped after 4 tries"));
        assert.ok(skipped, show());
        assert.match(skipped, LINE);
        // the line tells how to read the skipped event again
        const path = skipped.slice(skipped.indexOf("GET ") + 4);
        const again = await company.call(service.base, "GET", path);
        assert.equal(again.status, 200);
        assert.deepEqual(again.body.data.map((m: { body: string }) => seqOf(JSON.parse(m.body).data.transaction_id)), [
          13,
        ]);
      },
    );

    await t.step("Ctrl-C in a terminal stops it cleanly, though the command hears it twice", async () => {
      // a terminal sends SIGINT to its whole foreground group, the command and `deno task`, which passes its own on
      const status = await listen.pressCtrlC();
      assert.equal(status.code, 0, show());
      assert.match(out.at(-1) ?? "", /^listen: stopped/);
      assert.equal(badSignatures, 0);
    });

    await t.step(
      "with --url it signs in as a user, renews the token before it expires, and starts after what was acknowledged",
      async () => {
        const username = `listen-${crypto.randomUUID().slice(0, 8)}@example.com`;
        const made = await runTask(url, ["user:create", "--company", company.id, "--username", username], env);
        assert.equal(made.code, 0, made.stderr);
        const password = made.lines.at(-1)!;
        // the remote service, as a relay to it whose sign-in answers a token of a few seconds (a real one lives a day)
        let signIns = 0;
        const relayed = new Set<AbortController>();
        const remote = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
          const path = new URL(req.url).pathname + new URL(req.url).search;
          const relay = new AbortController();
          relayed.add(relay);
          const answer = await fetch(`${service.base}${path}`, {
            method: req.method,
            headers: req.headers,
            body: req.body,
            signal: relay.signal,
          });
          if (path !== "/api/v1/sign_in" || answer.status !== 200) return answer;
          signIns++;
          const signedInAs = await answer.json();
          return Response.json({ ...signedInAs, jwt: await signToken(TEST_TOKENS, company.id, 6) });
        });
        try {
          signedIn = startListen([
            "--forward-to",
            hooks,
            "--events",
            "identified",
            "--url",
            `http://127.0.0.1:${remote.addr.port}`,
          ], { ...env, LISTEN_USERNAME: username, LISTEN_PASSWORD: password });
          await eventually("signed in", () => signedIn!.out.some((l) => l.startsWith("listen: secret ")), 15_000);
          assert.ok(signedIn.out.some((l) => l.startsWith(`listen: signed in as ${username}: the token expires at `)));
          await emit(15, 15);
          await eventually("event 15", () => verified.includes(15), 10_000);
          await new Promise((r) => setTimeout(r, 3_500)); // past half the token's life
          await emit(16, 16);
          await eventually("event 16", () => verified.includes(16), 10_000);
          await new Promise((r) => setTimeout(r, 300));
          assert.deepEqual(verified, [...upTo(12), 14, 15, 16], signedIn.show());
          // the renewal is due at half the token's life; on a loaded machine its answer may come after event 16
          const renewed = `listen: signed in again as ${username}`;
          await eventually("the token renewed", () => signedIn!.out.some((l) => l.startsWith(renewed)), 5_000);
          assert.ok(signIns >= 2, signedIn.show()); // more under load: each renewal is at half the life left
          assert.ok(!signedIn.out.some((l) => l.includes("refused")), signedIn.show());
          assert.equal((await signedIn.stop()).code, 0, signedIn.show());
        } finally {
          // a step that failed leaves the command running, and its connection would keep the relay from shutting down
          if (signedIn && !signedIn.exited()) await signedIn.kill();
          for (const relay of relayed) relay.abort(); // the live stream it relays never ends by itself
          await remote.shutdown();
        }
      },
    );

    await t.step("--cleanup deletes the machine's stream", async () => {
      const cleanup = await runTask(url, ["listen", "--cleanup"], env);
      assert.equal(cleanup.code, 0, cleanup.stderr);
      assert.match(cleanup.stdout, /^listen: deleted stream /m);
      assert.deepEqual((await company.call(service.base, "GET", STREAMS)).body.data, []);
    });
  } finally {
    await listen.kill();
    await signedIn?.kill();
    await service.stop();
    await receiver.shutdown();
    await sql.end();
    await dropDatabase(url);
  }
});

type Listener = ReturnType<typeof startListen>;

/** `deno task listen <args>` as a process of its own, its stdout kept in lines. */
function startListen(args: string[], env: Record<string, string>) {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["task", "-q", "listen", ...args],
    cwd: root,
    env,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const out: string[] = [];
  let err = "";
  let partial = "";
  const decoder = new TextDecoder();
  const drained = Promise.all([
    child.stdout.pipeTo(
      new WritableStream({
        write(chunk) {
          const lines = (partial + decoder.decode(chunk, { stream: true })).split("\n");
          partial = lines.pop()!;
          out.push(...lines);
        },
      }),
    ),
    child.stderr.pipeTo(new WritableStream({ write: (c) => void (err += new TextDecoder().decode(c)) })),
  ]);
  let exited = false;
  child.status.then(() => exited = true);
  const end = async (signal: Deno.Signal) => {
    // SIGKILL reaches the task alone; the command it runs, which holds the pipes read below, goes with it
    if (!exited) signal === "SIGKILL" ? await killTree(child.pid, signal) : child.kill(signal);
    const status = await child.status;
    await drained;
    return status;
  };
  return {
    out,
    exited: () => exited,
    show: () => `${out.join("\n")}\n${err}`,
    /** Ctrl-C. */
    stop: () => end("SIGINT"),
    /** Ctrl-C as a terminal sends it: SIGINT to the task and to every process below it, at once. */
    pressCtrlC: async () => {
      if (!exited) await killTree(child.pid, "SIGINT");
      return await end("SIGINT");
    },
    kill: () => end("SIGKILL"),
  };
}
