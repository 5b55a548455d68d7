/**
 * What each benchmark figure means and, where the project set one, its target. Each figure prints as its
 * machine-readable line (`name value`, as scripts read it) followed by an indented line for people.
 */

import { DEFAULT_FILTER_TIME } from "../../domain/webhooks/outbox/filter_time.ts";

export type Figures = Record<string, number | string>;

/** `n` rounded to `places` decimals, as a figure prints. */
export const round = (n: number, places = 1) => Math.round(n * 10 ** places) / 10 ** places;

/**
 * What a company's filter time allows over the filters phase's 3 s (domain/webhooks/outbox/filter_time.ts's default
 * refill, and its burst spread over the run): tests/bench/filter_time.ts's company should get about this.
 */
const COMPANY_ALLOWANCE_MS_PER_S = DEFAULT_FILTER_TIME.perSecondMs + DEFAULT_FILTER_TIME.burstMs / 3;

type Description = { meaning: string; target?: { text: string; met: (value: number) => boolean } };

const atLeast = (min: number, unit = "") => ({ text: `>= ${min}${unit}`, met: (v: number) => v >= min });
const below = (max: number, unit = "") => ({ text: `< ${max}${unit}`, met: (v: number) => v < max });
const atMost = (max: number, unit = "") => ({ text: `<= ${max}${unit}`, met: (v: number) => v <= max });

/**
 * Issue 47's rows (docs/performance.md, "The money path"): what a GET or POST person cost the service's process and
 * its Postgres against what the floor's plain server and its Postgres spent, median of the rounds and each round.
 */
function cpuAgainstFloorDescriptions(): Record<string, Description> {
  const targets: Record<string, Record<string, number>> = {
    get_person: { service: 1.3, postgres: 1.3 },
    post_person: { service: 2.0, postgres: 1.4 },
  };
  return Object.fromEntries(
    Object.entries(targets).flatMap(([name, sides]) =>
      Object.entries(sides).flatMap(([side, max]) => {
        const request = name === "get_person" ? "GET person" : "POST person";
        const who = side === "service" ? "the service's process" : "Postgres (the service's sessions)";
        const floor = side === "service" ? "the floor's process" : "Postgres (the floor's sessions)";
        return [
          [`http_${name}_${side}_cpu_vs_floor`, {
            meaning: `CPU of ${who} per ${request} ÷ that of ${floor}, median of the rounds`,
            target: atMost(max),
          }],
          [`http_${name}_${side}_cpu_vs_floor_rounds`, {
            meaning: `the same ratio in each round, in order: the spread`,
          }],
        ];
      })
    ),
  );
}

/**
 * The figures of each HTTP phase run against its floor (tests/bench/floor_server.ts), medians of the rounds: the
 * service's rate and latencies, the floor's rate, the ratio's value in each round, and what a request cost each side.
 */
function againstFloor(phases: Record<string, string>): Record<string, Description> {
  return Object.fromEntries(
    Object.entries(phases).flatMap(([name, request]) => [
      [`http_${name}_rps`, { meaning: `${request} requests/s (median of the rounds)` }],
      [`http_${name}_p50_ms`, { meaning: `median latency of ${request} (ms)` }],
      [`http_${name}_p95_ms`, { meaning: `95th percentile latency of ${request} (ms)` }],
      [`http_${name}_p99_ms`, { meaning: `99th percentile latency of ${request} (ms)` }],
      [`http_${name}_errors`, { meaning: `${request} answers that were not 2xx, plus socket errors, all rounds` }],
      [`http_floor_${name}_rps`, { meaning: `the floor's ${request} requests/s (median of the rounds)` }],
      [`http_${name}_vs_floor_rounds`, { meaning: `${request} ÷ its floor in each round, in order: the spread` }],
      [`http_${name}_service_cpu_us`, { meaning: `CPU time of the service's process per ${request} (µs), from /proc` }],
      [`http_${name}_postgres_cpu_us`, { meaning: `CPU time of Postgres per ${request} of the service (µs)` }],
      [`http_floor_${name}_cpu_us`, { meaning: `CPU time of the floor's process per ${request} (µs)` }],
      [`http_floor_${name}_postgres_cpu_us`, { meaning: `CPU time of Postgres per ${request} of the floor (µs)` }],
    ]),
  );
}

/**
 * The CPU each side used over the fairness phase's two sequential drains (tests/bench/webhooks.ts, `cpuShares`), with
 * receivers answering after 50 ms (`fair_…`) and at once (`fair_instant_…`): shares of the machine's 2 cores, and per
 * delivery received during the drain.
 */
function fairnessCpuDescriptions(): Record<string, Description> {
  const receivers = { fair: "receivers answering after 50 ms", fair_instant: "instant receivers" };
  const drains = {
    alone: "while the sequential endpoint drained alone",
    beside: "while it drained beside the parallel backlog",
  };
  return Object.fromEntries(
    Object.entries(receivers).flatMap(([prefix, who]) =>
      Object.entries(drains).flatMap(([drain, when]) => [
        [`${prefix}_${drain}_service_cores`, {
          meaning: `${who}: the service's CPU ${when}, in cores (CPU time over wall time; the worker runs in the ` +
            `bench's process)`,
        }],
        [`${prefix}_${drain}_postgres_cores`, { meaning: `${who}: Postgres' CPU ${when}, in cores` }],
        [`${prefix}_${drain}_receivers_cores`, { meaning: `${who}: both receivers' CPU ${when}, in cores` }],
        [`${prefix}_${drain}_all_cores`, {
          meaning: `${who}: the three together ${when}, in cores (2 is all of this machine)`,
        }],
        [`${prefix}_${drain}_service_us_per_delivery`, {
          meaning: `${who}: the service's CPU ${when} per delivery received meanwhile, both endpoints' (µs)`,
        }],
        [`${prefix}_${drain}_postgres_us_per_delivery`, {
          meaning: `${who}: Postgres' CPU ${when} per delivery received meanwhile (µs)`,
        }],
      ])
    ),
  );
}

const DESCRIPTIONS: Record<string, Description> = {
  http_load_tool: { meaning: "what generated the HTTP load (wrk when installed, else a fetch loop in Deno)" },
  http_payins_16_subjects_service_cpu_us: {
    meaning: "CPU time of the service's process per sandbox pay-in (µs), from /proc, median of the rounds",
    target: atMost(650, " µs"),
  },
  http_payins_16_subjects_service_cpu_us_rounds: { meaning: "the same in each round, in order: the spread" },
  http_payins_16_subjects_postgres_cpu_us: { meaning: "CPU time of Postgres per sandbox pay-in (µs), from /proc" },
  http_payins_16_subjects_postgres_cpu_us_rounds: { meaning: "the same in each round, in order: the spread" },
  ...cpuAgainstFloorDescriptions(),
  http_payins_16_subjects_p50_ms: { meaning: "median latency of a sandbox pay-in on 16 subjects (ms)" },
  http_payins_16_subjects_p95_ms: { meaning: "95th percentile latency of a sandbox pay-in on 16 subjects (ms)" },
  http_payins_16_subjects_p99_ms: { meaning: "99th percentile latency of a sandbox pay-in on 16 subjects (ms)" },
  http_rounds: { meaning: "how many times each HTTP phase ran against its floor, the order swapped each time" },
  ...againstFloor({ healthz: "GET /healthz", post_person: "POST person", get_person: "GET person" }),
  http_healthz_vs_floor: {
    meaning: "GET /healthz requests/s as a share of the floor's /healthz (same select 1), median of the rounds",
    target: atLeast(0.95),
  },
  http_post_person_vs_floor: {
    meaning: "POST person requests/s as a share of the floor's plain upsert of the same body, median of the rounds",
    target: atLeast(0.75),
  },
  http_get_person_vs_floor: {
    meaning: "GET person requests/s as a share of the floor's plain select by id, median of the rounds",
    target: atLeast(0.8),
  },
  http_post_person_p99_ms: { meaning: "99th percentile latency of POST person (ms)", target: below(25, " ms") },
  http_get_person_p99_ms: { meaning: "99th percentile latency of GET person (ms)", target: below(25, " ms") },
  http_post_person_limited_rps: {
    meaning: "POST person requests/s with the per-company rate limit on, its buckets shared in Postgres",
  },
  http_post_person_limited_vs_unlimited_pct: {
    meaning: "POST person requests/s with the shared rate limit on, as a share of the same run with it off (%)",
    target: atLeast(90, "%"),
  },
  http_post_person_limited_errors: { meaning: "POST person answers (limit on) that were not 2xx: a 429 is one" },
  http_get_person_limited_rps: { meaning: "GET person requests/s with the shared rate limit on" },
  http_get_person_limited_vs_unlimited_pct: {
    meaning: "GET person requests/s with the shared rate limit on, as a share of the same run with it off (%)",
    target: atLeast(90, "%"),
  },
  http_get_person_limited_errors: { meaning: "GET person answers (limit on) that were not 2xx: a 429 is one" },
  http_payins_16_subjects_rps: { meaning: "sandbox pay-ins/s, each to the next of 16 subjects, 32 connections" },
  http_payins_16_subjects_vs_post_person: {
    meaning: "sandbox pay-ins/s on 16 subjects as a share of POST person/s (median of the rounds) in the same run",
    target: atLeast(0.6),
  },
  http_payins_16_subjects_errors: { meaning: "pay-in answers that were not 2xx, plus socket errors" },
  receipt_at_50_payins_p50_ms: {
    meaning: "median time from a pay-in's event to its receipt by a webhook receiver, 50 pay-ins/s on one subject",
    target: below(10, " ms"),
  },
  receipt_at_50_payins_p99_ms: { meaning: "99th percentile of the same (ms)", target: below(50, " ms") },
  receipt_at_100_payins_p50_ms: {
    meaning: "median event-to-receipt time at 100 pay-ins/s on one subject (ms), median of the rounds",
    target: atMost(5, " ms"),
  },
  receipt_at_100_payins_p99_ms: {
    meaning: "99th percentile of the same (ms), median of the rounds",
    target: atMost(25, " ms"),
  },
  receipt_at_100_payins_rounds: { meaning: "p50/p99 of each round at 100 pay-ins/s, in order: the spread" },
  soak_rate_per_s: {
    meaning: "the soak's steady rate: sandbox pay-ins a second, and as many GET person (BENCH_ONLY=soak)",
  },
  soak_minutes: { meaning: "how long the soak held that rate" },
  soak_accepted: { meaning: "pay-ins answered 201 over the soak" },
  soak_failed: { meaning: "pay-ins not answered 201 over the soak", target: below(1) },
  soak_most_behind_sequential: {
    meaning: "the most pay-ins the sequential endpoint was behind the producer at a minute's end",
    target: atMost(1000),
  },
  soak_most_behind_parallel: { meaning: "the same for the parallel endpoint", target: atMost(1000) },
  soak_caught_up_after_s: {
    meaning: "seconds after the load until both endpoints had every accepted pay-in (-1: not within the wait)",
    target: { text: "0 to 30 s", met: (v: number) => v >= 0 && v <= 30 },
  },
  soak_last_vs_third_minute_p50: {
    meaning: "the pay-ins' p50 in the soak's last minute over its third minute's",
    target: atMost(1.5),
  },
  soak_rss_mb_first_last: { meaning: "the service's resident memory after the first minute and after the last (MB)" },
  receipt_payins_lost: {
    meaning: "pay-ins answered 201 whose webhook never arrived in those phases",
    target: below(1),
  },

  events_per_run: { meaning: "events (or no-op jobs) each webhook phase pushes through" },
  worker_concurrency: { meaning: "jobs graphile-worker runs at once in this process" },
  noop_jobs_per_s: {
    meaning: "ceiling: no-op jobs/s the worker drains from a full queue (the queue's own cost, no delivery)",
  },
  emit_events_per_s: {
    meaning: "events/s producers commit with the worker stopped, each with its delivery record and job",
  },
  backlog_deliveries_per_s: { meaning: "deliveries/s the receiver gets when the worker starts on a full queue" },
  backlog_https_deliveries_per_s: {
    meaning: "deliveries/s from the same full queue to an https receiver (connections kept, TLS verified)",
  },
  backlog_https_vs_http: {
    meaning: "https backlog deliveries/s as a share of the http backlog's in the same run",
    target: atLeast(0.8),
  },
  mtls_events_per_run: { meaning: "events in each backlog of the mTLS phase (BENCH_MTLS_EVENTS)" },
  mtls_https_deliveries_per_s: {
    meaning: "mTLS phase: deliveries/s from a full queue to a plain https receiver (connections kept)",
  },
  mtls_deliveries_per_s: {
    meaning: "deliveries/s from a full queue to an https receiver that requires a client certificate (mTLS)",
  },
  mtls_vs_https: {
    meaning: "mTLS deliveries/s as a share of the plain https ones in the same run: a handshake per connection",
    target: atLeast(0.8),
  },
  oauth2_events_per_phase: { meaning: "events in each of the OAuth2 phase's two backlogs (plain, then OAuth2)" },
  oauth2_plain_deliveries_per_s: { meaning: "deliveries/s from a full queue to a plain endpoint, in the OAuth2 phase" },
  oauth2_deliveries_per_s: {
    meaning:
      "deliveries/s from the same full queue to an endpoint with OAuth2 client credentials (bearer token cached)",
  },
  oauth2_vs_plain: { meaning: "OAuth2 backlog deliveries/s as a share of the plain backlog's in the same run" },
  oauth2_token_requests: { meaning: "token requests the OAuth2 backlog made: one while the token lives" },
  backlog_vs_noop_pct: {
    meaning: "backlog deliveries/s as a share of the no-op ceiling (%), endpoints without a throttle",
    target: atLeast(90, "%"),
  },
  backlog_jobs_all_done_s: { meaning: "seconds until the last delivery job of the backlog completed" },
  live_deliveries_per_s: { meaning: "deliveries/s while 8 producers emit events at the same time" },
  live_noop_jobs_per_s: {
    meaning: "live ceiling: no-op jobs/s with 8 producers adding one per transaction while the worker runs",
  },
  live_vs_live_noop_pct: {
    meaning: "live deliveries/s as a share of the live no-op ceiling (%)",
    target: atLeast(40, "%"),
  },
  live_latency_p50_ms: { meaning: "median time from commit to receipt during the live phase, at full load (ms)" },
  live_latency_p99_ms: { meaning: "99th percentile time from commit to receipt during the live phase (ms)" },
  steady_rate_per_s: { meaning: "events/s emitted in the steady phase, one per transaction" },
  steady_latency_p50_ms: { meaning: "median time from commit to receipt at the steady rate (ms)" },
  steady_latency_p95_ms: { meaning: "95th percentile of the time from commit to receipt at the steady rate (ms)" },
  steady_latency_p99_ms: {
    meaning: "99th percentile time from commit to receipt at the steady rate (ms)",
    target: below(250, " ms"),
  },
  fair_sequential_alone_per_s: {
    meaning: "deliveries/s of a sequential endpoint's own backlog, nothing else queued, receiver answering in 50 ms",
  },
  fair_sequential_beside_per_s: {
    meaning: "the same backlog's deliveries/s when queued behind a parallel endpoint's backlog of events_per_run",
  },
  fair_sequential_beside_vs_alone: {
    meaning: "sequential deliveries/s beside the parallel backlog as a share of alone (ratio)",
    target: atLeast(0.8),
  },
  fair_parallel_done_when_sequential_done: {
    meaning: "parallel deliveries received by the time the sequential backlog was done (it drained beside it)",
  },
  fair_parallel_beside_per_s: {
    meaning: "the parallel backlog's deliveries/s (100 slots) while the sequential drained",
  },
  fair_total_deliveries_per_s: {
    meaning: "both backlogs' deliveries/s together, 50 ms receivers, until the last was received",
  },
  fair_instant_sequential_alone_per_s: {
    meaning: "the same with receivers answering at once: the sequential endpoint alone (deliveries/s)",
  },
  fair_instant_sequential_beside_per_s: {
    meaning: "...and beside the parallel backlog, which then saturates the process and the database (deliveries/s)",
  },
  fair_instant_sequential_beside_vs_alone: {
    meaning: "instant receivers: sequential beside as a share of alone (ratio; the process and Postgres saturated)",
    target: atLeast(0.8),
  },
  fair_instant_parallel_done_when_sequential_done: {
    meaning: "instant receivers: parallel deliveries received by the time the sequential backlog was done",
  },
  fair_instant_parallel_beside_per_s: { meaning: "instant receivers: the parallel backlog's deliveries/s" },
  fair_instant_total_deliveries_per_s: {
    meaning: "instant receivers: both backlogs' deliveries/s together, until the last (fairness must not lower it)",
  },
  fair_sequential_out_of_order: {
    meaning: "sequential deliveries that arrived after a later record of theirs, all four drains",
  },
  fair_deliveries_duplicated: { meaning: "deliveries that arrived more than once, all drains of the fairness phase" },
  ...fairnessCpuDescriptions(),
  deliveries_not_succeeded: {
    meaning: "delivery records not succeeded when the run ended",
    target: { text: "0", met: (v) => v === 0 },
  },
  volume_history_seeded: {
    meaning: "transactions this year seeded (set-based SQL) into the one subject of the volume part",
  },
  volume_seed_s: { meaning: "seconds the seeding took (transactions and their events)" },
  volume_payins_fresh_rps: { meaning: "sandbox pay-ins/s into one subject with almost no history, 16 connections" },
  volume_payins_aged_rps: { meaning: "the same pay-ins/s after the seeded history" },
  volume_payins_aged_vs_fresh: {
    meaning: "pay-ins/s with the history as a share of without (ratio)",
    target: atLeast(0.9),
  },
  volume_payins_errors: { meaning: "pay-in answers that were not 2xx, plus socket errors" },
  volume_values_fresh_p50_ms: { meaning: "median GET transaction_values with little history (ms)" },
  volume_values_aged_p50_ms: { meaning: "median GET transaction_values after the seeded history (ms)" },
  volume_values_aged_p99_ms: { meaning: "99th percentile GET transaction_values after the seeded history (ms)" },
  history_rows: { meaning: "delivery records (and events) seeded for the events-list part" },
  history_seed_s: { meaning: "seconds the seeding from 10,000 to that many records took (set-based SQL)" },
  events_list_worst_p99_ratio: {
    meaning: "the largest ratio of an events-list filter's p99 with the full history to its p99 with 10,000 records",
    target: { text: "<= 1.5", met: (v) => v <= 1.5 },
  },
  prune_history_rows: { meaning: "rows of events, delivery records and attempts before the prune (45 days)" },
  prune_seed_s: { meaning: "seconds the seeding of that history took (set-based SQL)" },
  prune_rows_removed: { meaning: "rows the prune removed: everything older than the 30-day retention" },
  prune_rows_left_past_retention: {
    meaning: "rows older than the retention still there after the prune",
    target: { text: "0", met: (v) => v === 0 },
  },
  prune_partitions_dropped: { meaning: "day partitions of events and attempts the prune detached and dropped" },
  prune_records_deleted_in_batches: { meaning: "delivery records the prune deleted, 5,000 per transaction" },
  prune_s: { meaning: "seconds the prune took" },
  search_events: { meaning: "events (one record each) of the one company the search part seeds, two seconds apart" },
  search_list_p50_ms: { meaning: "median page of 20 of that company's events list, no filter (ms)" },
  search_list_p99_ms: { meaning: "99th percentile of the same page (ms)" },
  search_transaction_first_p50_ms: {
    meaning: "median page by transaction_id of the transaction the first event names, 30,000 events before now (ms)",
  },
  search_transaction_first_p99_ms: { meaning: "99th percentile of the same page (ms)" },
  search_transaction_last_p50_ms: { meaning: "median page by transaction_id of the last event's transaction (ms)" },
  search_transaction_last_p99_ms: { meaning: "99th percentile of the same page (ms)" },
  search_transaction_unknown_p50_ms: { meaning: "median page by a transaction_id no event names (ms)" },
  search_transaction_unknown_p99_ms: { meaning: "99th percentile of the same page (ms)" },
  search_event_first_p50_ms: { meaning: "median page by event_id of the first event (ms)" },
  search_event_first_p99_ms: { meaning: "99th percentile of the same page (ms)" },
  search_transaction_first_before_lookup_p50_ms: {
    meaning: "the first transaction's page when its events predate sql/0045's lookup: the read of the events (ms)",
  },
  search_transaction_first_before_lookup_p99_ms: { meaning: "99th percentile of the same page (ms)" },
  search_emit_p50_ms: { meaning: "median emit of an event to one endpoint, its own transaction, with the lookup (ms)" },
  search_emit_without_lookup_p50_ms: { meaning: "the same emits with the lookup's trigger disabled (ms)" },
  stats_attempts: {
    meaning: "attempts of one endpoint in the last 24 hours behind its stats (tests/bench/endpoint_stats.ts)",
  },
  stats_seed_s: { meaning: "seconds seeding their records and attempts took (set-based SQL)" },
  stats_fill_s: { meaning: "seconds filling the health aggregate from that log took (one statement)" },
  stats_rows: {
    meaning: "the endpoint's rows in the aggregate: 4 a minute over 24 hours, then 1 a minute for 29 days",
  },
  stats_read_1h_p50_ms: { meaning: "median read of the endpoint's stats since an hour ago (endpointStats, ms)" },
  stats_read_1h_p99_ms: { meaning: "99th percentile of that read (ms)" },
  stats_read_24h_p50_ms: { meaning: "median read of the stats since 24 hours ago, the default (ms)" },
  stats_read_24h_p99_ms: { meaning: "99th percentile of that read, over the 1,000,000 attempts (ms)" },
  stats_read_30d_p50_ms: { meaning: "median read of the stats since 30 days ago: every minute of the retention (ms)" },
  stats_read_30d_p99_ms: { meaning: "99th percentile of that read (ms)" },
  stats_hours_rolled: { meaning: "hours of minute rows rolled into hour rows past a day (rollUpStats)" },
  stats_rollup_s: { meaning: "seconds that rollup took, one transaction per hour" },
  stats_read_30d_hours_p50_ms: { meaning: "median read since 30 days ago once the minutes past a day are hours (ms)" },
  stats_read_30d_hours_p99_ms: { meaning: "99th percentile of that read (ms)" },
  stats_read_24h_hours_p50_ms: { meaning: "median read since 24 hours ago after the rollup (ms)" },
  stats_log_scan_24h_p50_ms: {
    meaning: "the same figures since 24 hours ago by scanning the attempt log (median, ms)",
  },
  stats_log_scan_24h_p99_ms: { meaning: "the slowest of those scans (ms)" },
  stats_p95_aggregate_ms: { meaning: "p95 duration of the 24 hours' attempts from the aggregate's histogram (ms)" },
  stats_p95_log_ms: { meaning: "the exact p95 of the same attempts, from the log (ms)" },
  prune_lost_within_retention: {
    meaning: "delivery records inside the retention that the prune removed",
    target: { text: "0", met: (v) => v === 0 },
  },
  prune_delivery_p99_quiet_ms: { meaning: "p99 emit-to-receipt at 100 events/s without a prune (ms)" },
  prune_delivery_p99_during_ms: {
    meaning: "p99 emit-to-receipt at 100 events/s while the prune runs (ms)",
    target: below(250, " ms"),
  },
  prune_emit_p99_quiet_ms: { meaning: "p99 of committing one event without a prune (ms)" },
  prune_emit_p99_during_ms: { meaning: "p99 of committing one event while the prune runs (ms)" },
  peak_rss_mb: {
    meaning:
      "peak resident memory of the process running the worker and the producers, with the V8 flags of deno task start (MB)",
    target: below(250, " MB"),
  },
  filter_eval_us: {
    meaning: "one evaluation of a typical payload filter (currency and amount), compiled, on an event's data (µs)",
    target: below(10, " µs"),
  },
  filter_evals_per_s: { meaning: "evaluations of that filter per second, one core" },
  filter_eval_without_budget_us: {
    meaning: "the same evaluation without the filter budget's count, as before it: a plain cel-js environment (µs)",
  },
  filter_budget_overhead_pct: { meaning: "what the budget's count adds to one evaluation of that filter (%)" },
  filter_check_us: { meaning: "checking that filter at create/update: parse, type check, rules (µs)" },
  filter_type_check_us: {
    meaning: "checking that filter against its endpoint's event types at create/update (typed filters), the types' " +
      "declarations kept (µs)",
  },
  filter_type_check_new_types_us: {
    meaning: "the same for a set of subscribed types seen for the first time, declared then (µs)",
  },
  filter_worst_eval_ms: {
    meaning: "the slowest of the heaviest accepted filters on an event as large as the save-time estimate assumes, " +
      "median of 20 (ms): what the 20 ms time budget must cover",
    target: below(20, " ms"),
  },
  fanout_5_filters_cpu_us: {
    meaning:
      "what fan-out adds in process per event for 5 endpoints with that filter: the data's JSON round trip and " +
      "5 evaluations (µs)",
  },
  fanout_5_endpoints_no_filter_us: {
    meaning:
      "emitEvent in a transaction of its own to 5 endpoints without a filter, commit included; median round (µs)",
  },
  fanout_5_endpoints_filtered_us: { meaning: "the same, each endpoint with the typical filter, which passes (µs)" },
  fanout_filter_overhead_pct: { meaning: "what the 5 filters add to that fan-out, as a share of it without (%)" },
  filter_time_payin_us: {
    meaning:
      "what a company's filter time (the token bucket) adds to the pay-in's fan-out: emitEvent of `identified` " +
      "to one endpoint whose filter passes, commit included, bucket on (default settings) less off, this process's " +
      "CPU per event, median of 1,500 pairs of events alternating on and off (µs; the machine's noise when near 0)",
  },
  filter_time_payin_on_us: { meaning: "that emitEvent with the bucket on: this process's CPU per event (median, µs)" },
  filter_time_payin_off_us: {
    meaning: "the same with the bucket off (FILTER_TIME_MS_PER_SECOND=0), events alternating with on (µs)",
  },
  filter_time_payin_wall_us: { meaning: "the same difference, on less off, in wall time per event (median, µs)" },
  filter_time_fanout_us: {
    meaning: "what the bucket adds to one filtered fan-out: emitEvent of a bank transaction to 50 endpoints whose " +
      "typical filter passes, commit included, on less off, this process's CPU per event, median of 400 pairs (µs)",
  },
  filter_time_fanout_on_us: { meaning: "that fan-out with the bucket on: this process's CPU per event (median, µs)" },
  filter_time_fanout_off_us: { meaning: "the same with the bucket off, events alternating with on (µs)" },
  filter_time_fanout_wall_us: { meaning: "the same difference, on less off, in wall time per event (median, µs)" },
  filter_time_fanout_deferred: {
    meaning: "records written deferred in those two measurements: 0 unless a pause of the machine outlasted an " +
      "event's 5 ms slice (the default budget never binds on typical filters)",
  },
  filter_time_decide_50_us: {
    meaning: "deciding 50 endpoints' typical filters for one event in process (decideFilters), the bucket's " +
      "bookkeeping on, every filter evaluated: median of runs taking turns first with the next two (µs)",
  },
  filter_time_decide_50_off_us: { meaning: "the same with the bucket off: the 5 ms slice's clock alone (µs)" },
  filter_time_decide_50_before_us: {
    meaning: "the same decision as b06cba6 made it: each filter evaluated, nothing charged (µs)",
  },
  filter_time_heavy_eval_ms: {
    meaning: "one evaluation of the costly accepted filter of tests/webhooks/filter_time_test.ts (HEAVY), median (ms)",
  },
  filter_time_company_ms_per_s: {
    meaning: "a company with that filter on 50 endpoints, emitting events one after another for 3 s: the filter " +
      "time it got per second, as its bucket charged it (ms/s)",
    target: below(Math.round(1.1 * COMPANY_ALLOWANCE_MS_PER_S), " ms/s (its allowance, 10 % over)"),
  },
  filter_time_company_allowed_ms_per_s: {
    meaning: "what its budget allows over that run: FILTER_TIME_MS_PER_SECOND plus FILTER_TIME_BURST_MS spread over " +
      "the run's seconds (ms/s)",
  },
  filter_time_company_held_ms_per_s: {
    meaning: "what its fan-outs held the thread for per second in that run, timed around emitEvent's synchronous " +
      "part (its filters, and the statements of the records it deferred) (ms/s)",
  },
  filter_time_company_events: { meaning: "events the company emitted in those 3 s" },
  filter_time_company_deferred: {
    meaning: "records written deferred in those 3 s, waiting for the engine to decide them (no worker ran)",
  },
  filter_time_company_unbound_ms_per_s: {
    meaning: "the same company with a bucket that never binds (as FILTER_TIME_MS_PER_SECOND=0): the 5 ms slice of " +
      "each event alone bounds it (ms/s)",
  },
  filter_time_company_unbound_held_ms_per_s: { meaning: "what its fan-outs held the thread for then (ms/s)" },
  filter_time_company_unbound_deferred: { meaning: "records written deferred then (past each event's 5 ms slice)" },
  filter_time_company_before_ms_per_s: {
    meaning: "the same company deciding as b06cba6 did, every filter at every event up to 50 ms an event: its " +
      "evaluations timed (ms/s)",
  },
  filter_time_company_before_held_ms_per_s: { meaning: "what its fan-outs held the thread for then (ms/s)" },
  ...Object.fromEntries([5, 50].flatMap((rate) => [
    [`throttle_${rate}ps_precision_pct`, {
      meaning: `deliveries/s achieved over rate_limit ${rate}, two sets of drainers sharing the database (%)`,
      target: { text: "95% to 101%", met: (v: number) => v >= 95 && v <= 101 },
    }],
    [`throttle_${rate}ps_max_in_1s`, {
      meaning: `the most deliveries any one second held at rate_limit ${rate}`,
      target: { text: `<= ${rate + 1}`, met: (v: number) => v <= rate + 1 },
    }],
  ])),
  batches_one_by_one_events_per_s: {
    meaning: "events/s of a backlog emitted at once to an instant receiver, one event a request (max_concurrency 10)",
  },
  batches_of_50_events_per_s: { meaning: "the same backlog to an endpoint with batch max_events 50 (events/s)" },
  batches_of_50_vs_one_by_one: {
    meaning: "batches of 50 over one by one, same run",
    target: atLeast(5, "x"),
  },
  batches_latency_one_by_one_p50_ms: { meaning: "10 events/s one by one: emitted to received, p50 (ms)" },
  batches_latency_one_by_one_p99_ms: { meaning: "the same, p99 (ms)" },
  batches_latency_200ms_p50_ms: { meaning: "10 events/s with batch max_wait_ms 200: emitted to received, p50 (ms)" },
  batches_latency_200ms_p99_ms: {
    meaning: "the same, p99 (ms): the wait a batch adds, and its delivery",
    target: { text: "<= 250 ms", met: (v: number) => v <= 250 },
  },
  batches_latency_added_p99_ms: { meaning: "p99 batched minus p99 one by one (ms)" },
  replay_10k_queue_ms: {
    meaning: "one recover with include_skipped queuing 10,000 events missed while disabled, among 30,000 (ms)",
  },
  replay_10k_again_ms: { meaning: "the same recover again, which finds each of them with its record (ms)" },
  replay_10k_filtered_queue_ms: {
    meaning: "the first recover for an endpoint with a payload filter: each event read with its data, evaluated (ms)",
  },
  tracing_off_post_person_rps: {
    meaning: "POST person requests/s with tracing off (the default), turns paired with on",
  },
  tracing_on_post_person_rps: {
    meaning: "the same with OTEL_DENO=true: request, statement spans exported over OTLP http/protobuf to loopback",
  },
  tracing_on_vs_off_pct: { meaning: "POST person with tracing on, as a share of off (%)" },
  tracing_off_post_person_p99_ms: { meaning: "POST person p99 with tracing off (ms)" },
  tracing_on_post_person_p99_ms: { meaning: "POST person p99 with tracing on (ms)" },
  tracing_export_bytes_per_post: { meaning: "OTLP trace bytes the service exported per POST person" },
  tracing_errors: { meaning: "non-2xx answers and socket errors in the tracing phase" },
  operational_success_attempts_per_s: {
    meaning: "attempts recorded per second when every answer is 2xx: one statement per batch, as before (16 loops)",
  },
  operational_failure_attempts_per_s: {
    meaning: "the same when every answer is 500: each batch a transaction with the operational events' checks",
  },
  operational_failure_subscribed_attempts_per_s: {
    meaning: "the same with an endpoint subscribed: endpoint.failing once, delivery.exhausted per record, emitted",
  },
  operational_failure_vs_success: { meaning: "failed attempts recorded per second, as a share of succeeded ones" },
  signing_hmac_us: {
    meaning: "signing one attempt of an hmac-sha256 endpoint: service-signature and one v1, of a snapshot body (µs)",
  },
  signing_ed25519_us: { meaning: "signing one attempt of an ed25519 endpoint: one v1a, of the same body (µs)" },
  signing_ed25519_vs_hmac_x: { meaning: "Ed25519 signing per attempt as a multiple of HMAC's" },
  payload_render_before_versions_us: {
    meaning: "the same snapshot body as the renderer before payload versions wrote it, JSON.stringify alone (µs)",
  },
  payload_render_unpinned_us: {
    meaning: "rendering one snapshot body for an endpoint that names no payload version (the first) (µs)",
  },
  payload_render_first_us: { meaning: "the same body for an endpoint pinned to the first payload version (µs)" },
  payload_render_latest_us: {
    meaning: "the same body for an endpoint pinned to the latest payload version, with `timestamp` (µs)",
  },
  payload_render_first_vs_latest_x: {
    meaning: "rendering pinned to the first version as a multiple of the latest: stepping a body down costs less " +
      "than writing the latest's `timestamp` (below 1)",
  },
  signing_ed25519_rotating_us: {
    meaning: "the same during the 24 hours after a rotation, two v1a, (the new key and the previous) (µs)",
  },
  signing_ed25519_webcrypto_us: {
    meaning: "one Ed25519 signature with Web Crypto (asynchronous), the alternative to node:crypto's sign (µs)",
  },
  verify_ed25519_us: { meaning: "a receiver's node:crypto verify of one v1a signature with the public key (µs)" },
  headers_events_per_round: { meaning: "events in each backlog of the custom headers phase" },
  headers_none_deliveries_per_s: {
    meaning: "deliveries/s from a full queue to an endpoint without custom headers (median of alternating rounds)",
  },
  headers_five_deliveries_per_s: {
    meaning: "the same to an endpoint with five custom headers (four plain, one secret opened per attempt)",
  },
  headers_five_vs_none: { meaning: "deliveries/s with five custom headers as a share of none, same run" },
  headers_deliveries_not_succeeded: { meaning: "records of the custom headers phase that did not succeed" },
  dest_events_per_backlog: { meaning: "events in each parallel backlog of the destinations phase" },
  dest_sequential_events_per_backlog: { meaning: "events in each sequential backlog of the destinations phase" },
  dest_rounds: { meaning: "runs of every backlog, transports alternating; each rate is their median" },
  dest_transports: { meaning: "http and the broker transports this release registers, in the order they ran" },
  ...destinationDescriptions(),
};

/**
 * The destinations phase's figures (tests/bench/destinations.ts), per transport and per backlog: `dest_<t>_…` for
 * the parallel endpoint's, `dest_<t>_sequential_…` for the sequential one's. Every broker transport is described,
 * registered or not: the phase covers each once it is.
 */
function destinationDescriptions(): Record<string, Description> {
  const names: Record<string, string> = {
    http: "HTTP (instant receiver)",
    amqp: "RabbitMQ",
    nats: "NATS JetStream",
    redis: "Redis Streams",
    mqtt: "MQTT",
  };
  const endpoints = { "": "a parallel endpoint (max_concurrency 100)", _sequential: "a sequential endpoint" };
  return Object.fromEntries(
    Object.entries(names).flatMap(([t, name]) =>
      Object.entries(endpoints).flatMap(([suffix, endpoint]) => {
        const p = `dest_${t}${suffix}`;
        const entries: [string, Description][] = [
          [`${p}_deliveries_per_s`, {
            meaning: `${name}: deliveries/s from a full queue to ${endpoint}, until no record is pending`,
          }],
          [`${p}_rounds`, { meaning: `${name}, ${endpoint}: deliveries/s of each round, in order` }],
          [`${p}_not_succeeded`, { meaning: `${name}, ${endpoint}: records not succeeded when the backlog ended` }],
          [`${p}_capped`, { meaning: `${name}, ${endpoint}: backlogs cut at BENCH_DESTINATION_CAP_S` }],
          [`${p}_not_read`, { meaning: `${name}, ${endpoint}: records succeeded that the consumer did not read` }],
          [`${p}_duplicates`, { meaning: `${name}, ${endpoint}: messages the consumer read twice` }],
          [`${p}_service_cpu_us`, { meaning: `${name}, ${endpoint}: the worker's process CPU per delivery (µs)` }],
          [`${p}_postgres_cpu_us`, { meaning: `${name}, ${endpoint}: Postgres' CPU per delivery (µs)` }],
          [`${p}_receiver_cpu_us`, {
            meaning: `${name}, ${endpoint}: the receiver's or consumer's process CPU per delivery (µs)`,
          }],
          [`${p}_broker_cpu_us`, {
            meaning: `${name}, ${endpoint}: the broker server's CPU per delivery, whoever else used it (µs)`,
          }],
        ];
        if (suffix) {
          entries.push([`${p}_out_of_order`, {
            meaning: `${name}: messages the consumer read after a later record (0: in order)`,
          }]);
        }
        if (t !== "http") {
          entries.push([`${p}_vs_http_rounds`, { meaning: `${name}, ${endpoint}: each round's ratio to HTTP's` }]);
          entries.push([`${p}_vs_http`, {
            meaning: `${name} deliveries/s to ${endpoint} over HTTP's, same run, every publish awaiting its confirm`,
            // the issue's target; on a machine whose cores also run the broker it counts the broker's own CPU
            // (docs/performance.md, "Destinations"), hence the one below
            ...(suffix ? {} : { target: atLeast(1) }),
          }]);
          if (!suffix) {
            entries.push([`${p}_service_cpu_vs_http`, {
              meaning:
                `${name}: the service's CPU per delivery over HTTP's, same run (what a broker costs the service)`,
              target: { text: "<= 1", met: (v: number) => v <= 1 },
            }]);
          }
        }
        return entries;
      })
    ),
  );
}

export type Verdict = { name: string; value: number | string; target: string; met: boolean };

/** The figures that have a target, each with whether it was met (a figure that is not a number is not met). */
export function verdicts(figures: Figures): Verdict[] {
  return Object.entries(figures).flatMap(([name, value]) => {
    const target = DESCRIPTIONS[name]?.target;
    if (!target) return [];
    return [{ name, value, target: target.text, met: typeof value === "number" && target.met(value) }];
  });
}

/** Figures named per events-list filter (tests/bench/volume_history.ts). */
function generated(name: string): string | undefined {
  const m = /^events_list_(\w+?)_p99_(ms|ratio)$/.exec(name);
  if (!m) return undefined;
  return m[2] === "ms"
    ? `99th percentile of one events-list page filtered "${m[1]}" with the full history (ms)`
    : `that p99 as a ratio of the same filter's p99 with 10,000 records`;
}

/** The lines to print for `figures`: per figure the machine-readable line, then its meaning and target. */
export function describe(figures: Figures): string[] {
  const results = new Map(verdicts(figures).map((v) => [v.name, v]));
  return Object.entries(figures).flatMap(([name, value]) => {
    const verdict = results.get(name);
    const meaning = DESCRIPTIONS[name]?.meaning ?? generated(name) ?? "(no description)";
    const target = verdict ? `; target ${verdict.target}: ${verdict.met ? "met" : "NOT MET"}` : "";
    return [`${name.padEnd(32)} ${value}`, `    ${meaning}${target}`];
  });
}

/** One closing line: how many targets were met, naming the missed ones. */
export function summary(figures: Figures): string {
  const all = verdicts(figures);
  const missed = all.filter((v) => !v.met);
  const names = missed.map((v) => `${v.name} ${v.value} (target ${v.target})`).join(", ");
  return `targets met: ${all.length - missed.length} of ${all.length}${missed.length ? `; missed: ${names}` : ""}`;
}
