/**
 * The deploy stories of docs/production.md ("Upgrading"), with real processes on one database under load: a rolling
 * upgrade from the previous release (previous-release.json) to this one, then its contract step, and a rollback from
 * this release to the previous one on the new schema. A client-side balancer sends pay-ins only to instances whose
 * `/readyz` answers 200, as a load balancer's health check would.
 */
import assert from "node:assert/strict";
import { verifySignature } from "../../domain/webhooks/endpoints/signature.ts";
import { createEndpointAt } from "../support/endpoints.ts";
import { dropDatabase, eventually, freshDatabase, TEST_ENCRYPTION_KEY } from "../support/helpers.ts";
import { previousRelease, type Release } from "../support/releases.ts";
import { httpCompany, runTask, type ServiceProcess, startService } from "../support/service_process.ts";
import { sleep, startReceiver } from "../support/webhook_receiver.ts";
import project from "../../deno.json" with { type: "json" };
import amqp from "amqplib";
import { connect } from "../../domain/infra/db.ts";

const previous = await previousRelease();
const whyNot = typeof previous === "string" ? previous : null;
if (whyNot) console.warn(`upgrade_test: ignored: ${whyNot}`);

/** How long a SIGTERM keeps an instance serving with `/readyz` at 503: a few of the balancer's checks. */
const DRAIN_MS = 800;
const CHECK_EVERY_MS = 100;
/** Pay-ins a second, one at a time, so the order they were accepted in is the order of their events. */
const PACE_MS = 25;

type Company = Awaited<ReturnType<typeof httpCompany>>;

/** One running instance of either release, as the balancer sees it. */
type Instance = { name: string; version: string; service: ServiceProcess; ready: boolean };

/**
 * Instances joined and taken out as a load balancer does: each one's `/readyz` is asked every CHECK_EVERY_MS, and
 * requests go round-robin to those that last answered 200.
 */
function balancer() {
  const instances: Instance[] = [];
  let turn = 0;
  let running = true;
  const checks = (async () => {
    while (running) {
      await Promise.all(instances.map(async (i) => {
        i.ready = await fetch(`${i.service.base}/readyz`).then(async (r) => {
          await r.body?.cancel();
          return r.status === 200;
        }, () => false);
      }));
      await sleep(CHECK_EVERY_MS);
    }
  })();
  return {
    instances,
    add: (instance: Instance) => instances.push(instance),
    remove: (instance: Instance) => instances.splice(instances.indexOf(instance), 1),
    pick: (): Instance | null => {
      const ready = instances.filter((i) => i.ready);
      return ready.length ? ready[turn++ % ready.length] : null;
    },
    close: async () => {
      running = false;
      await checks;
    },
  };
}
type Balancer = ReturnType<typeof balancer>;

/**
 * Card pay-ins on one subject, one at a time through the balancer, until `stop()`. Every answer is kept: an
 * upgrade allows only 201s, so anything else (a 5xx, a 503, a connection that failed) is a finding.
 */
function payIns(company: Company, lb: Balancer, subjectId: string) {
  const accepted: string[] = [];
  const byVersion = new Map<string, number>();
  const unexpected: string[] = [];
  let running = true;
  const done = (async () => {
    while (running) {
      const instance = lb.pick();
      if (!instance) {
        unexpected.push("no instance was ready");
        await sleep(PACE_MS);
        continue;
      }
      const res = await company.call(instance.service.base, "POST", "/api/sandbox/card_payments", {
        subject_id: subjectId,
        value: "10.00",
        currency: "BRL",
        outcome: "approved",
      }).catch((err) => ({ status: 0, body: `connection failed: ${err instanceof Error ? err.message : err}` }));
      if (res.status === 201) {
        accepted.push(res.body.data.id);
        byVersion.set(instance.version, (byVersion.get(instance.version) ?? 0) + 1);
      } else unexpected.push(`${instance.name} (${instance.version}): ${res.status} ${JSON.stringify(res.body)}`);
      await sleep(PACE_MS);
    }
  })();
  return {
    accepted,
    byVersion,
    unexpected,
    stop: async () => {
      running = false;
      await done;
    },
  };
}

/** Readers beside the pay-ins: GETs of the subject, several at once, so a hand-over meets requests in flight. */
const READERS = 4;

function reads(company: Company, lb: Balancer, subjectId: string) {
  let ok = 0;
  const unexpected: string[] = [];
  let running = true;
  const loops = Array.from({ length: READERS }, async () => {
    while (running) {
      const instance = lb.pick();
      if (instance) {
        const res = await company.call(instance.service.base, "GET", `/api/v1/subject/people/${subjectId}`)
          .catch((err) => ({ status: 0, body: `connection failed: ${err instanceof Error ? err.message : err}` }));
        if (res.status === 200) ok++;
        else unexpected.push(`${instance.name} (${instance.version}): ${res.status} ${JSON.stringify(res.body)}`);
      }
      await sleep(10);
    }
  });
  return {
    unexpected,
    stop: async () => {
      running = false;
      await Promise.all(loops);
      return ok;
    },
  };
}

/**
 * The story's settings for every instance of either release: one sealing key, as a deployment sets it (each release's
 * tree would otherwise generate its own, docs/production.md, "Secrets generated outside production"), the drain, and
 * logs kept to find error lines.
 */
const ENV = {
  SECRET_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
  SHUTDOWN_DRAIN_MS: String(DRAIN_MS),
  LOG_LEVEL: "info",
  WORKER_CONCURRENCY: "2",
};

async function launch(lb: Balancer, name: string, db: string, release: Release | null): Promise<Instance> {
  const service = await startService(db, ENV, { logs: true, release: release?.dir, readyTimeoutMs: 60_000 });
  const instance = { name, version: release?.version ?? project.version, service, ready: false };
  lb.add(instance);
  // in rotation once the balancer's own check has seen it ready
  await eventually(`${name} to join the balancer`, () => instance.ready, 5_000);
  return instance;
}

/**
 * SIGTERM as an orchestrator sends it. An instance of this release drains: the balancer must see `/readyz` go to 503
 * while it still serves. One of release 1.0.0, which closes its socket at once, is first taken out of the balancer, as
 * docs/production.md ("Upgrading") tells the operator to. Either must exit 0 within its drain and grace.
 */
async function retire(lb: Balancer, instance: Instance, ended: Instance[]) {
  const drains = instance.version !== "1.0.0";
  if (!drains) {
    lb.remove(instance);
    await sleep(CHECK_EVERY_MS); // the request in flight there, if any, is answered
  }
  const since = performance.now();
  const exited = instance.service.stop();
  if (drains) await eventually(`${instance.name} to leave the balancer`, () => !instance.ready, 3_000);
  const status = await exited;
  const seconds = (performance.now() - since) / 1000;
  assert.equal(status.code, 0, `${instance.name} exits 0 on SIGTERM: ${instance.service.stderr()}`);
  assert.ok(seconds < DRAIN_MS / 1000 + 10, `${instance.name} exits within its drain and grace (${seconds} s)`);
  if (drains) lb.remove(instance);
  ended.push(instance);
}

/** Error lines an instance logged, and anything it wrote on stderr that looks like a failure. */
function troubleIn(instance: Instance): string[] {
  const errors = instance.service.logs().filter((l) =>
    (l.level === "error" || l.level === "fatal") && !knownOfPrevious(instance, l)
  );
  const stderr = instance.service.stderr().split("\n").filter((l) => /error|panic|uncaught/i.test(l));
  return [
    ...errors.map((l) => `${instance.name}: ${JSON.stringify(l)}`),
    ...stderr.map((l) => `${instance.name}: ${l}`),
  ];
}

/**
 * The previous release's one known error of a rolling upgrade (docs/production.md, "Old and new side by side (1.3.0 and
 * 1.4.0)"): a drain whose transaction met a statement it prepared before the migration added a column. Its attempts
 * are made again: the stories' own assertions (all, in order, once each per `webhook-id`) still hold for them.
 */
function knownOfPrevious(instance: Instance, line: Record<string, unknown>): boolean {
  return typeof previous !== "string" && instance.version === previous.version &&
    line.msg === "webhook drain failed" && line.error === "cached plan must not change result type";
}

/** A story's world: a database, a receiver checking signatures, a company with a sequential and a parallel endpoint. */
async function world(name: string) {
  const db = await freshDatabase(name);
  const secrets = new Map<string, string>();
  const badSignatures: string[] = [];
  const receiver = startReceiver(async (arrival) => {
    if (!(await verifySignature(arrival.raw, arrival.signature, secrets.get(arrival.path) ?? ""))) {
      badSignatures.push(arrival.path);
      return new Response("bad signature", { status: 400 });
    }
    return new Response("ok");
  });
  return { db, secrets, badSignatures, receiver };
}
type World = Awaited<ReturnType<typeof world>>;

async function endpointsAndSubject(w: World, company: Company, base: string) {
  for (const [path, settings] of [["/sequential", { delivery_mode: "sequential" }], ["/parallel", {}]] as const) {
    const made = await createEndpointAt(company, base, `${w.receiver.url}${path}`, settings);
    w.secrets.set(path, made.secret);
  }
  const person = await company.call(base, "POST", "/api/v1/subject/people", {
    person: { document_number: "52998224725", document_type: "cpf", social_name: "Ana", fiscal_country: "BRA" },
  });
  assert.equal(person.status, 201, JSON.stringify(person.body));
  return person.body.data.id as string;
}

/**
 * A RabbitMQ exchange of the story's own with a queue bound to every key, read as a consumer would: the transaction ids
 * of the messages in the order they first arrived. The broker endpoint publishing there is made through an instance of
 * this release (docs/production.md, "Old and new side by side (1.3.0 and 1.4.0)").
 */
async function rabbitQueue() {
  const connection = await amqp.connect("amqp://guest:guest@127.0.0.1:5672/%2F");
  const channel = await connection.createChannel();
  const exchange = `upgrade-story-${crypto.randomUUID().slice(0, 8)}`;
  await channel.assertExchange(exchange, "topic", { durable: false });
  const { queue } = await channel.assertQueue("", { exclusive: true });
  await channel.bindQueue(queue, exchange, "#");
  const arrivals: string[] = [];
  await channel.consume(queue, (m) => {
    if (!m) return;
    const tx: string | undefined = JSON.parse(m.content.toString()).data?.transaction_id;
    if (tx && !arrivals.includes(tx)) arrivals.push(tx);
    channel.ack(m);
  });
  return {
    exchange,
    arrivals,
    endpoint: (company: Company, base: string) =>
      createEndpointAt(company, base, "amqp://127.0.0.1:5672/%2F", {
        destination: { exchange, routing_key: "pay.{type}" },
        broker_credentials: { username: "guest", password: "guest" },
        delivery_mode: "sequential",
      }),
    close: async () => {
      await channel.deleteExchange(exchange).catch(() => {});
      await connection.close().catch(() => {});
    },
  };
}

/**
 * A pull stream's consumer (docs/webhooks.md, "Pull streams"), made and read through instances of this release only
 * (the previous one has no stream routes): long polls from its cursor, acknowledging what it read; the transaction ids
 * in the order read.
 */
function streamConsumer(company: Company, lb: Balancer) {
  const read: string[] = [];
  let stream: string | null = null;
  let cursor: string | null = null;
  let running = true;
  const current = () => lb.instances.find((i) => i.ready && i.version === project.version);
  const done = (async () => {
    while (running) {
      const instance = current();
      if (!instance || !stream) {
        await sleep(50);
        continue;
      }
      const path = `/api/v2/notifications/streams/${stream}`;
      const query: string = cursor ? `?wait=1&after=${encodeURIComponent(cursor)}` : "?wait=1";
      const res: { status: number; body: { data: { body: string }[]; next_cursor: string } } = await company
        .call(instance.service.base, "GET", `${path}/messages${query}`)
        .catch(() => ({ status: 0, body: { data: [], next_cursor: "" } }));
      if (res.status !== 200) {
        await sleep(50);
        continue;
      }
      for (const m of res.body.data) {
        const tx: string | undefined = JSON.parse(m.body).data?.transaction_id;
        if (tx && !read.includes(tx)) read.push(tx);
      }
      cursor = res.body.next_cursor;
      if (res.body.data.length) {
        await company.call(instance.service.base, "POST", `${path}/ack`, { cursor }).catch(() => {});
      }
    }
  })();
  return {
    read,
    /** Makes the stream through an instance of this release, and starts reading it. */
    make: async (base: string) => {
      const made = await company.call(base, "POST", "/api/v2/notifications/streams", {});
      assert.equal(made.status, 201, JSON.stringify(made.body));
      stream = made.body.data.id;
    },
    stop: async () => {
      running = false;
      await done;
    },
  };
}

/**
 * What a story with a broker endpoint ends with: its messages are the pay-ins accepted from some point on, in order,
 * and no instance of the previous release ever tried one of its records (a try would be an attempt the record counts:
 * every record published once, or pending with none).
 */
async function assertBrokerClean(
  db: string,
  endpointId: string,
  arrivals: string[],
  accepted: string[],
): Promise<{ published: number; untried: number }> {
  const start = accepted.indexOf(arrivals[0]);
  assert.ok(arrivals.length > 0 && start >= 0, `the broker endpoint got pay-ins (${arrivals.length})`);
  assert.deepEqual(arrivals, accepted.slice(start, start + arrivals.length), "the broker endpoint: in order");
  return await untriedByThePrevious(db, endpointId);
}

/**
 * An endpoint the previous release must never deliver to (a broker's, a batched one's): every record was sent once and
 * succeeded, or is pending without an attempt; a try by the previous release would be an attempt the record counts.
 */
async function untriedByThePrevious(db: string, endpointId: string): Promise<{ published: number; untried: number }> {
  const sql = connect(db, { max: 1 });
  try {
    const records = await sql<{ status: string; attempts: number; n: number }[]>`
      select status, attempts, count(*)::int as n from webhook_deliveries where endpoint_id = ${endpointId}
      group by status, attempts order by status, attempts`;
    const tried = records.filter((r) => !(r.status === "succeeded" && r.attempts === 1) && r.attempts !== 0);
    assert.deepEqual(tried, [], `no record tried but by a publish that succeeded: ${JSON.stringify(records)}`);
    const count = (attempts: number) => records.filter((r) => r.attempts === attempts).reduce((n, r) => n + r.n, 0);
    return { published: count(1), untried: count(0) };
  } finally {
    await sql.end();
  }
}

/** Transaction ids in the order they first arrived at `path` (a retry repeats one; only the first counts). */
function firstArrivals(w: World, path: string): string[] {
  const seen = new Set<string>();
  const order: string[] = [];
  for (const a of w.receiver.at(path)) {
    const tx: string | undefined = a.body?.data?.transaction_id;
    if (tx && !seen.has(tx)) {
      seen.add(tx);
      order.push(tx);
    }
  }
  return order;
}

/** What every story must end with: nothing refused or failed, nothing acknowledged lost, order kept, no error line. */
async function assertClean(w: World, load: ReturnType<typeof payIns>, instances: Instance[]) {
  assert.deepEqual(load.unexpected, [], "every pay-in answered 201, through every hand-over");
  assert.ok(load.accepted.length >= 40, `a load worth the name (${load.accepted.length} pay-ins)`);
  const all = (path: string) => firstArrivals(w, path).length >= load.accepted.length;
  await eventually("every pay-in at both endpoints", () => all("/sequential") && all("/parallel"), 20_000)
    .catch(() => {}); // the assertions below say what is missing
  assert.deepEqual(firstArrivals(w, "/sequential"), load.accepted, "the sequential endpoint: all, in order");
  assert.deepEqual(
    new Set(firstArrivals(w, "/parallel")),
    new Set(load.accepted),
    "the parallel endpoint: every accepted pay-in",
  );
  assert.deepEqual(w.badSignatures, []);
  assert.deepEqual(instances.flatMap(troubleIn), [], "no instance logged an error");
}

/**
 * One deploy under load: two instances of release `from` (null: this one) serve pay-ins and reads; then, twice, an
 * instance of `to` starts (the first one migrates while the others serve) and takes its share, and one of `from` is
 * retired. Ends with every check of `assertClean`, both releases having accepted pay-ins. `joined` sees the first
 * instance of `to` once it serves (with the story's database), `done` runs once only `to` is left.
 */
async function handOver(
  name: string,
  from: Release | null,
  to: Release | null,
  hooks: { joined?: (i: Instance & { db: string }) => Promise<void>; done?: (db: string) => Promise<void> } = {},
) {
  const w = await world(name);
  const lb = balancer();
  const ended: Instance[] = [];
  const label = (r: Release | null) => r ? "old" : "new";
  const rabbit = await rabbitQueue();
  let brokerEndpoint: string | null = null;
  let batchedEndpoint: string | null = null;
  let streamReading: { stop: () => Promise<void> } | null = null;
  try {
    const first = [await launch(lb, `${label(from)}-1`, w.db, from), await launch(lb, `${label(from)}-2`, w.db, from)];
    const company = await httpCompany();
    const subject = await endpointsAndSubject(w, company, first[0].service.base);
    // a broker endpoint, made through an instance of this release: at once when it starts the story, else once it joins
    const streamReader = streamConsumer(company, lb);
    streamReading = streamReader;
    // a batched endpoint on the receiver (docs/webhooks.md, "Batches"), made through this release as the broker's is
    const batched = async (base: string) => {
      const made = await createEndpointAt(company, base, `${w.receiver.url}/batched`, {
        batch: { max_events: 5, max_wait_ms: 200 },
      });
      w.secrets.set("/batched", made.secret);
      return made.id as string;
    };
    if (!from) batchedEndpoint = await batched(first[0].service.base);
    if (!from) brokerEndpoint = (await rabbit.endpoint(company, first[0].service.base)).id;
    if (!from) await streamReader.make(first[0].service.base);
    const load = payIns(company, lb, subject);
    const reading = reads(company, lb, subject);
    const replacements: Instance[] = [];
    for (const [n, leaving] of first.entries()) {
      await sleep(600);
      const joining = await launch(lb, `${label(to)}-${n + 3}`, w.db, to);
      replacements.push(joining);
      if (n === 0) await hooks.joined?.({ ...joining, db: w.db });
      if (n === 0 && !to) brokerEndpoint ??= (await rabbit.endpoint(company, joining.service.base)).id;
      if (n === 0 && !to) batchedEndpoint ??= await batched(joining.service.base);
      if (n === 0 && !to) await streamReader.make(joining.service.base);
      await sleep(600);
      await retire(lb, leaving, ended);
    }
    await sleep(600);
    await load.stop();
    const read = await reading.stop();
    assert.deepEqual(reading.unexpected, [], "every read answered 200, through every hand-over");
    await assertClean(w, load, [...ended, ...replacements]);
    if (!to) {
      // every pay-in from the endpoint's making on reaches the broker once this release alone delivers
      const last = load.accepted[load.accepted.length - 1];
      await eventually("the broker endpoint to catch up", () => rabbit.arrivals.includes(last), 20_000).catch(() => {});
    }
    const broker = await assertBrokerClean(w.db, brokerEndpoint!, rabbit.arrivals, load.accepted);
    // the batched endpoint got arrays only: the previous release never sent one of its records alone
    const batches = w.receiver.at("/batched");
    assert.ok(batches.length > 0, "the batched endpoint got requests");
    assert.ok(batches.every((a) => Array.isArray(a.body)), "every request to the batched endpoint was a batch");
    const batchedRecords = await untriedByThePrevious(w.db, batchedEndpoint!);
    if (!to) {
      const last = load.accepted[load.accepted.length - 1];
      await eventually("the stream's consumer to catch up", () => streamReader.read.includes(last), 20_000)
        .catch(() => {});
    }
    await streamReader.stop();
    // the stream: the pay-ins from its making on (all of them once this release alone serves), in order, none skipped
    const start = load.accepted.indexOf(streamReader.read[0]);
    assert.ok(start >= 0 && streamReader.read.length > 0, `the stream was read (${streamReader.read.length})`);
    assert.deepEqual(streamReader.read, load.accepted.slice(start, start + streamReader.read.length), "stream order");
    if (!to) assert.equal(start + streamReader.read.length, load.accepted.length, "the stream read to the last pay-in");
    for (const r of [from, to]) {
      const version = r?.version ?? project.version;
      assert.ok((load.byVersion.get(version) ?? 0) > 0, `release ${version} accepted pay-ins`);
    }
    await hooks.done?.(w.db);
    console.log(
      `${name.replace("_", " ")}: ${load.accepted.length} pay-ins (${
        [...load.byVersion].map(([v, n]) => `${n} by ${v}`).join(", ")
      }) and ${read} reads, none refused or failed; the amqp:// endpoint: ${broker.published} published, ${broker.untried} ` +
        `pending untried; the batched endpoint: ${batches.length} requests for ${batchedRecords.published} events, ` +
        `${batchedRecords.untried} pending untried; the stream: ${streamReader.read.length} read`,
    );
    for (const i of replacements) await retire(lb, i, ended);
  } finally {
    await lb.close();
    for (const i of lb.instances) await i.service.kill();
    await streamReading?.stop();
    await rabbit.close();
    await w.receiver.close();
    await dropDatabase(w.db);
  }
}

Deno.test({
  name:
    `deploys under load: a rolling upgrade from the previous release and its contract step, then a rollback to it ` +
    `on the new schema${whyNot ? ` (ignored: ${whyNot})` : ""}`,
  ignore: whyNot !== null,
  fn: async (t) => {
    const old = previous as Release;

    await t.step(
      `upgrade ${old.version} → ${project.version}: a new instance at a time, the old ones retired`,
      () =>
        handOver("upgrade_story", old, null, {
          joined: async (c) => {
            const listening = c.service.logs().find((l) => l.msg === "listening");
            assert.equal(listening?.version, project.version, "the start line names the release");
            const readiness = await fetch(`${c.service.base}/readyz`).then((r) => r.json());
            assert.equal(readiness.version, project.version);
            // the contract step waits for the old release to be gone
            const early = await runTask(c.db, ["migrate", "--contract"]);
            assert.equal(early.code, 1, early.stdout + early.stderr);
            // named as the old release's pool names itself (application_name: payments-api/<version> from 1.1.0 on)
            const oldName = old.version === "1.0.0" ? "payments-api" : `payments-api/${old.version}`;
            const named = new RegExp(`still connected \\(\\d+ as ${oldName.replaceAll(".", "\\.")}\\)`);
            assert.match(early.stderr, named);
          },
          done: async (db) => {
            const contract = await runTask(db, ["migrate", "--contract"]);
            assert.equal(contract.code, 0, contract.stdout + contract.stderr);
            assert.match(
              contract.stdout,
              new RegExp(`release ${project.version.replaceAll(".", "\\.")}: contract step done`),
            );
          },
        }),
    );

    await t.step(
      `rollback ${project.version} → ${old.version} on the new schema, one instance at a time`,
      () => handOver("rollback_story", null, old),
    );
  },
});

Deno.test("SIGTERM drains: /readyz answers 503 draining while requests are still served, then the process exits 0", async () => {
  const db = await freshDatabase("drain_story");
  const service = await startService(db, { SHUTDOWN_DRAIN_MS: "1500" });
  try {
    const company = await httpCompany();
    const since = performance.now();
    const exited = service.stop();
    await eventually(
      "/readyz to say draining",
      async () => {
        const res = await fetch(`${service.base}/readyz`);
        return res.status === 503 && (await res.json()).status === "draining";
      },
      1_000,
      20,
    );
    // still serving, each answer closing its connection so the next request goes back through the balancer
    const during = await fetch(`${service.base}/api/v1/subject/people?per_page=1`, {
      headers: { authorization: `Bearer ${company.token}` },
    });
    assert.equal(during.status, 200, await during.text());
    assert.equal(during.headers.get("connection"), "close");
    const readiness = await fetch(`${service.base}/readyz`).then((r) => r.json());
    assert.equal(readiness.version, project.version);
    assert.equal((await exited).code, 0);
    const seconds = (performance.now() - since) / 1000;
    assert.ok(seconds >= 1.5, `served through the drain (${seconds.toFixed(2)} s)`);
    await assert.rejects(fetch(`${service.base}/healthz`), "the socket is closed after the drain");
  } finally {
    await service.kill();
    await dropDatabase(db);
  }
});
