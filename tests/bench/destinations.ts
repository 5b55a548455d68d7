/**
 * Destinations (`BENCH_ONLY=destinations`; docs/webhooks.md, "Destinations"; docs/performance.md, "Destinations"):
 * deliveries/s to each broker transport this release registers (domain/webhooks/destinations/registry.ts), beside
 * an HTTP endpoint in the same run, from the same backlog as the webhooks phase's: `BENCH_DESTINATION_EVENTS`
 * (20,000) events emitted one per transaction while no worker runs, then drained by the worker of this process, to
 * one parallel endpoint (max_concurrency 100); then `BENCH_DESTINATION_SEQUENTIAL_EVENTS` (2,000) to one sequential
 * endpoint. A backlog is done when none of its records is pending (every publish acknowledged, each broker with its
 * confirms: RabbitMQ's publisher confirm, JetStream's PubAck, Redis' XADD reply, MQTT's PUBACK), or when
 * `BENCH_DESTINATION_CAP_S` (120 s) passed: its rate is then what succeeded by that time. Each backlog has a database
 * of its own, so none inherits another's records or leftovers, and a receiver or consumer process of its own
 * (receiver.ts answering at once; broker_consumer.ts reading the broker), loopback only. With it, the CPU per delivery
 * of the service (this process: the worker), Postgres (this database's sessions), the receiving end and the broker's
 * server process (shared with whatever else uses it meanwhile). `BENCH_DESTINATION_ROUNDS` (1) runs every backlog
 * that many times, alternating transports; each figure is the median.
 */
import { createEndpoint } from "../../domain/webhooks/endpoints/endpoints.ts";
import { secretBoxFor } from "../../domain/infra/secret_box.ts";
import type { Sql } from "../../domain/infra/db.ts";
import { BROKER_TRANSPORTS, type TransportName } from "../../domain/webhooks/destinations/transport.ts";
import { TRANSPORTS } from "../../domain/webhooks/destinations/registry.ts";
import { benchBase, emitMany, startReceiver } from "./webhooks.ts";
import { cpuDuring } from "./cpu.ts";
import { type Figures, round } from "./figures.ts";

const EVENTS = Number(Deno.env.get("BENCH_DESTINATION_EVENTS") ?? 20_000);
const SEQUENTIAL_EVENTS = Number(Deno.env.get("BENCH_DESTINATION_SEQUENTIAL_EVENTS") ?? 2_000);
const CAP_MS = Number(Deno.env.get("BENCH_DESTINATION_CAP_S") ?? 120) * 1000;
const ROUNDS = Number(Deno.env.get("BENCH_DESTINATION_ROUNDS") ?? 1);
/** How long a consumer may take to connect and make its place before the phase gives up on its broker. */
const CONSUMER_START_MS = 15_000;

/** The broker's server process on this machine, whose CPU a backlog adds to the figures (its `comm`). */
const BROKER_PROCESS: Record<string, string> = {
  redis: "redis-server",
  amqp: "beam.smp",
  nats: "nats-server",
  mqtt: "mosquitto",
};

/** What the receiving end has read: messages, distinct record ids among them, and ids below one seen before. */
type Reading = { received: number; distinct: number; out_of_order: number };

/** The receiving end of one backlog: the endpoint settings that reach it, what it read, its process. */
type End = {
  endpoint: { url: string; destination?: unknown; broker_credentials?: unknown };
  pid: number;
  read(): Promise<Reading>;
  close(): Promise<void>;
};

/** The broker transports this release registers, in their fixed order: the phase covers each as it is merged. */
export const registeredBrokers = () => BROKER_TRANSPORTS.filter((name) => TRANSPORTS[name]);

/** The instant HTTP receiver of the webhooks phase, counting what arrives at its one path. */
async function httpEnd(): Promise<End> {
  const receiver = await startReceiver();
  return {
    endpoint: { url: receiver.url },
    pid: receiver.pid,
    read: async () => {
      const [received, order] = await Promise.all([receiver.count(), receiver.order()]);
      return { received, distinct: received - order.duplicates, out_of_order: order.out_of_order };
    },
    close: receiver.close,
  };
}

/** A broker_consumer.ts process reading a new place on the broker of `transport`, named uniquely. */
async function brokerEnd(transport: string): Promise<End> {
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--quiet",
      "--allow-all",
      "--config",
      new URL("../../deno.json", import.meta.url).pathname,
      new URL("./broker_consumer.ts", import.meta.url).pathname,
      transport,
      crypto.randomUUID().slice(0, 8),
    ],
    stdin: "null",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = "";
  const nextLine = async (): Promise<string | null> => {
    while (!buffered.includes("\n")) {
      const { value, done } = await lines.read();
      if (done) return null;
      buffered += value;
    }
    const at = buffered.indexOf("\n");
    const line = buffered.slice(0, at);
    buffered = buffered.slice(at + 1);
    return line;
  };
  // a broker that does not answer must not hold the phase: its consumer gets a moment to make its place
  let timer: ReturnType<typeof setTimeout> | undefined;
  const first = await Promise.race([
    nextLine(),
    new Promise<null>((resolve) => timer = setTimeout(() => resolve(null), CONSUMER_START_MS)),
  ]).finally(() => clearTimeout(timer));
  if (first === null) {
    try {
      child.kill("SIGKILL");
    } catch {
      // it ended by itself
    }
    await child.status;
    throw new Error(`the ${transport} consumer made no place on the broker within ${CONSUMER_START_MS} ms`);
  }
  let latest: Reading = { received: 0, distinct: 0, out_of_order: 0 };
  const following = (async () => {
    for (let line = await nextLine(); line !== null; line = await nextLine()) latest = JSON.parse(line);
  })();
  return {
    endpoint: JSON.parse(first),
    pid: child.pid,
    read: () => Promise.resolve(latest),
    close: async () => {
      child.kill("SIGTERM");
      await child.status;
      await following.catch(() => {});
    },
  };
}

/** The pid of the process whose command is `comm`, or null (a broker in a container, another machine, no /proc). */
async function pidOf(comm: string): Promise<number | null> {
  try {
    for await (const entry of Deno.readDir("/proc")) {
      if (!/^\d+$/.test(entry.name)) continue;
      const name = await Deno.readTextFile(`/proc/${entry.name}/comm`).catch(() => "");
      if (name.trim() === comm) return Number(entry.name);
    }
  } catch {
    // no /proc
  }
  return null;
}

/** Polls, every 100 ms, whether the endpoint still has a pending record (the partial index of pending ones). */
async function untilNonePending(sql: Sql, endpointId: string, deadline: number): Promise<boolean> {
  while (performance.now() < deadline) {
    const [{ left }] = await sql<{ left: boolean }[]>`
      select exists (
        select 1 from webhook_deliveries where endpoint_id = ${endpointId} and status = 'pending'
      ) as left`;
    if (!left) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return false;
}

type Backlog = {
  perSecond: number;
  succeeded: number;
  capped: boolean;
  reading: Reading;
  /** CPU per delivery that succeeded (µs), by side; null without /proc. */
  cpuUs: { service: number; postgres: number; receiver: number; broker: number | null } | null;
};

/**
 * One backlog of `events` to one endpoint at `transport` (a parallel one with max_concurrency 100, or a sequential
 * one), on a database of its own: emitted while no worker runs, then timed from the worker's start until no record
 * is pending, or until the cap.
 */
async function backlog(transport: TransportName, events: number, sequential: boolean): Promise<Backlog> {
  const { sql, config, start, close } = await benchBase();
  const end = transport === "http" ? await httpEnd() : await brokerEnd(transport);
  try {
    const companyId = crypto.randomUUID();
    await sql`insert into companies (id) values (${companyId})`;
    const quota = { endpoints: config.limits.endpointsPerCompany, concurrency: config.limits.concurrencyPerCompany };
    const settings = sequential ? { delivery_mode: "sequential" as const } : { max_concurrency: 100 };
    const endpoint = await createEndpoint(sql, companyId, { ...end.endpoint, ...settings }, {
      allowPrivateUrls: true,
      quota,
      box: await secretBoxFor(config),
    });
    await emitMany(sql, companyId, events);
    const brokerPid = transport === "http" ? null : await pidOf(BROKER_PROCESS[transport]);
    const pids: Record<string, number> = { service: Deno.pid, receiver: end.pid };
    if (brokerPid) pids.broker = brokerPid;
    const measured = await cpuDuring(pids, async () => {
      const started = performance.now();
      await start();
      const drained = await untilNonePending(sql, endpoint.id, started + CAP_MS);
      return { drained, seconds: (performance.now() - started) / 1000 };
    }, decodeURIComponent(new URL(config.databaseUrl).pathname.slice(1)));
    const [{ succeeded }] = await sql<{ succeeded: number }[]>`
      select count(*)::int as succeeded from webhook_deliveries
      where endpoint_id = ${endpoint.id} and status = 'succeeded'`;
    // what the consumer read: the last messages of a drained backlog may still be on their way to it
    let reading = await end.read();
    for (let i = 0; i < 20 && reading.received < succeeded; i++) {
      await new Promise((r) => setTimeout(r, 100));
      reading = await end.read();
    }
    const c = measured.cpuMs;
    const perDelivery = (ms: number) => round((ms * 1000) / Math.max(1, succeeded), 0);
    return {
      perSecond: succeeded / measured.result.seconds,
      succeeded,
      capped: !measured.result.drained,
      reading,
      cpuUs: c
        ? {
          service: perDelivery(c.service),
          postgres: perDelivery(c.postgres),
          receiver: perDelivery(c.receiver),
          broker: c.broker === undefined ? null : perDelivery(c.broker),
        }
        : null,
    };
  } finally {
    await end.close();
    await close();
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** Each backlog's runs, rounds alternating transports so that a slower spell of the machine falls on all of them. */
async function runs(transports: TransportName[], events: number, sequential: boolean) {
  const all = new Map<TransportName, Backlog[]>(transports.map((t) => [t, []]));
  for (let round = 0; round < ROUNDS; round++) {
    for (const t of transports) all.get(t)!.push(await backlog(t, events, sequential));
  }
  return all;
}

/** A run's figures under `prefix`: medians of its rounds, the counts summed. */
function figuresOf(prefix: string, backlogs: Backlog[], events: number): Figures {
  const cpu = (side: "service" | "postgres" | "receiver" | "broker") => {
    const values = backlogs.map((b) => b.cpuUs?.[side]).filter((v): v is number => typeof v === "number");
    return values.length ? median(values) : "n/a";
  };
  return {
    [`${prefix}_deliveries_per_s`]: round(median(backlogs.map((b) => b.perSecond)), 0),
    [`${prefix}_rounds`]: backlogs.map((b) => round(b.perSecond, 0)).join(" "),
    [`${prefix}_not_succeeded`]: backlogs.reduce((n, b) => n + events - b.succeeded, 0),
    [`${prefix}_capped`]: backlogs.filter((b) => b.capped).length,
    [`${prefix}_not_read`]: backlogs.reduce((n, b) => n + Math.max(0, b.succeeded - b.reading.distinct), 0),
    [`${prefix}_duplicates`]: backlogs.reduce((n, b) => n + b.reading.received - b.reading.distinct, 0),
    // a parallel endpoint's deliveries overtake one another by design: order is the sequential endpoint's promise
    ...(prefix.endsWith("_sequential")
      ? { [`${prefix}_out_of_order`]: backlogs.reduce((n, b) => n + b.reading.out_of_order, 0) }
      : {}),
    [`${prefix}_service_cpu_us`]: cpu("service"),
    [`${prefix}_postgres_cpu_us`]: cpu("postgres"),
    [`${prefix}_receiver_cpu_us`]: cpu("receiver"),
    [`${prefix}_broker_cpu_us`]: cpu("broker"),
  };
}

/** The table the phase prints: per transport its rates and their ratio to HTTP's, and the CPU per delivery. */
function table(transports: TransportName[], f: Figures): string[] {
  const cell = (v: unknown) => String(v ?? "n/a");
  const ratio = (v: unknown) => (typeof v === "number" ? `${v.toFixed(2)}×` : "n/a");
  const rows = transports.map((t) => [
    t,
    cell(f[`dest_${t}_deliveries_per_s`]),
    t === "http" ? "1.00×" : ratio(f[`dest_${t}_vs_http`]),
    cell(f[`dest_${t}_sequential_deliveries_per_s`]),
    t === "http" ? "1.00×" : ratio(f[`dest_${t}_sequential_vs_http`]),
    cell(f[`dest_${t}_service_cpu_us`]),
    cell(f[`dest_${t}_postgres_cpu_us`]),
    cell(f[`dest_${t}_receiver_cpu_us`]),
    t === "http" ? "-" : cell(f[`dest_${t}_broker_cpu_us`]),
  ]);
  const head = [
    "transport",
    "parallel/s",
    "vs http",
    "sequential/s",
    "vs http",
    "service µs",
    "postgres µs",
    "receiver µs",
    "broker µs",
  ];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (r: string[]) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join("  ");
  return [line(head), ...rows.map(line), "(µs: CPU per delivery of the parallel backlog, each side's, from /proc)"];
}

export async function benchDestinations(): Promise<Figures> {
  const transports: TransportName[] = ["http", ...registeredBrokers()];
  const parallel = await runs(transports, EVENTS, false);
  const sequential = await runs(transports, SEQUENTIAL_EVENTS, true);
  const figures: Figures = {
    dest_events_per_backlog: EVENTS,
    dest_sequential_events_per_backlog: SEQUENTIAL_EVENTS,
    dest_rounds: ROUNDS,
    dest_transports: transports.join(","),
  };
  for (const t of transports) Object.assign(figures, figuresOf(`dest_${t}`, parallel.get(t)!, EVENTS));
  for (const t of transports) {
    Object.assign(figures, figuresOf(`dest_${t}_sequential`, sequential.get(t)!, SEQUENTIAL_EVENTS));
  }
  for (const t of transports.filter((t) => t !== "http")) {
    // each round's ratio too: the rounds alternate transports, so a round's pair shares the machine's spell
    for (const suffix of ["", "_sequential"]) {
      const [mine, http] = [figures[`dest_${t}${suffix}_rounds`], figures[`dest_http${suffix}_rounds`]].map((r) =>
        String(r).split(" ").map(Number)
      );
      figures[`dest_${t}${suffix}_vs_http_rounds`] = mine.map((v, i) => round(v / http[i], 2)).join(" ");
    }
    const ratio = (prefix: string) =>
      round(
        Number(figures[`dest_${t}${prefix}_deliveries_per_s`]) / Number(figures[`dest_http${prefix}_deliveries_per_s`]),
        2,
      );
    figures[`dest_${t}_vs_http`] = ratio("");
    figures[`dest_${t}_sequential_vs_http`] = ratio("_sequential");
    figures[`dest_${t}_service_cpu_vs_http`] = round(
      Number(figures[`dest_${t}_service_cpu_us`]) / Number(figures[`dest_http_service_cpu_us`]),
      2,
    );
  }
  for (const line of table(transports, figures)) console.log(line);
  return figures;
}
