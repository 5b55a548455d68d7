/**
 * `deno task bench:publish`: the figures docs/benchmark.md publishes, measured the way `deno task bench`
 * measures them (api.ts and webhooks.ts), printed as that page's Markdown with the machine, Postgres' settings and
 * the commit they were taken on. Measures only: nothing here asserts a timing.
 */
import { benchHttp } from "./api.ts";
import { benchWebhooks } from "./webhooks.ts";
import type { Figures } from "./figures.ts";
import { connect } from "../../domain/infra/db.ts";
import { dropDatabase, freshDatabase } from "../support/helpers.ts";

/** Postgres' settings that move these figures, as the server reports them. */
const SETTINGS = [
  "max_connections",
  "shared_buffers",
  "synchronous_commit",
  "fsync",
  "wal_level",
  "max_wal_size",
  "work_mem",
  "effective_cache_size",
];

async function machine(): Promise<string[]> {
  const cpu = (await Deno.readTextFile("/proc/cpuinfo").catch(() => "")).match(/model name\s*:\s*(.*)/)?.[1];
  const memory = Math.round(Deno.systemMemoryInfo().total / 1024 ** 3);
  const url = await freshDatabase("bench_publish_facts");
  const sql = connect(url, { max: 1 });
  try {
    const [{ version }] = await sql<{ version: string }[]>`select split_part(version(), ' on ', 1) as version`;
    const settings = await sql<{ name: string; value: string }[]>`
      select name, current_setting(name) as value from pg_settings where name = any(${SETTINGS}) order by name`;
    const git = (...args: string[]) =>
      new Deno.Command("git", { args, stdout: "piped", stderr: "null" }).output()
        .then((o) => new TextDecoder().decode(o.stdout).trim(), () => "");
    const dirty = (await git("status", "--porcelain", "--untracked-files=no")) ? " with uncommitted changes" : "";
    const commit = `${(await git("rev-parse", "--short", "HEAD")) || "unknown"}${dirty}`;
    return [
      `- **Machine:** ${navigator.hardwareConcurrency} cores (${cpu ?? "unknown CPU"}), ${memory} GiB, ` +
      `${Deno.build.os} ${Deno.osRelease()}; the service, Postgres and the load generator (wrk) share it.`,
      `- **Software:** Deno ${Deno.version.deno}, ${version} on the same machine (loopback TCP).`,
      `- **Postgres settings:** ${settings.map((s) => `\`${s.name}=${s.value}\``).join(", ")}.`,
      `- **Taken:** ${new Date().toISOString().slice(0, 10)}, commit ${commit}, load average before the run ` +
      `${Deno.loadavg().map((n) => n.toFixed(1)).join(" / ")}.`,
    ];
  } finally {
    await sql.end();
    await dropDatabase(url);
  }
}

const n = (v: number | string | undefined) => typeof v === "number" ? v.toLocaleString("en-US") : String(v ?? "n/a");

function tables(http: Figures, hooks: Figures): string[] {
  const call = (name: string, key: string, floor: string) =>
    `| ${name} | ${n(http[`http_${key}_rps`])} | ${http[`http_${key}_p50_ms`]} | ${http[`http_${key}_p95_ms`]} | ` +
    `${http[`http_${key}_p99_ms`]} | ${floor} |`;
  const shareOf = (key: string) => `${http[`http_${key}_vs_floor`]} (rounds: ${http[`http_${key}_vs_floor_rounds`]})`;
  return [
    `| Call (32 connections, ${http.http_load_tool}) | requests/s | p50 ms | p95 ms | p99 ms | share of its floor |`,
    "| --- | --- | --- | --- | --- | --- |",
    call("POST person (a new person each time)", "post_person", shareOf("post_person")),
    call("GET person", "get_person", shareOf("get_person")),
    call(
      "Sandbox pay-in, 16 subjects",
      "payins_16_subjects",
      `${http.http_payins_16_subjects_vs_post_person} of POST person`,
    ),
    "",
    "| Webhooks | figure |",
    "| --- | --- |",
    `| Backlog of ${n(hooks.events_per_run)} events, deliveries/s | ${n(hooks.backlog_deliveries_per_s)} ` +
    `(${hooks.backlog_vs_noop_pct} % of graphile-worker's no-op jobs/s in the same run, ${n(hooks.noop_jobs_per_s)}) |`,
    `| Event → 2xx at ${hooks.steady_rate_per_s} events/s, p50 / p95 / p99 ms | ${hooks.steady_latency_p50_ms} / ` +
    `${hooks.steady_latency_p95_ms} / ${hooks.steady_latency_p99_ms} |`,
    `| Pay-in's event → receipt at 100 pay-ins/s through the API, p50 / p99 ms | ` +
    `${http.receipt_at_100_payins_p50_ms} / ${http.receipt_at_100_payins_p99_ms} |`,
    `| Deliveries not succeeded; a sequential endpoint's out of order; any duplicated | ` +
    `${hooks.deliveries_not_succeeded}; ${hooks.fair_sequential_out_of_order}; ${hooks.fair_deliveries_duplicated} |`,
    `| Peak resident memory of the delivering process | ${hooks.peak_rss_mb} MB |`,
  ];
}

const facts = await machine();
const http = await benchHttp();
const hooks = await benchWebhooks();
console.log(["", "<!-- deno task bench:publish -->", ...facts, "", ...tables(http, hooks)].join("\n"));
