/**
 * Leases: how a drainer holds a concurrency slot of an endpoint and the record it carries, across every process
 * sharing the database (docs/architecture.md, "Leases and slots"). A lease is not a lock held by a connection: it
 * names its holder (`leased_by`, a worker process) and runs out by itself, so a lost connection or a crash never
 * keeps a slot for ever. When a lease is free, until when one runs and how many slots an endpoint has are SQL functions
 * (`lease_is_free`, `lease_until`, `endpoint_slot_limit`, sql/0036) that every statement of this folder calls on its
 * own rows; this file holds the lease's length and its holder.
 *
 * Every statement that leases (the claim, claim.ts, and the record statement's hand-over, record.ts) commits
 * synchronously, Postgres' default: its answer comes only once the synchronous replica has the lease on disk, with the
 * record it leases, and an attempt starts only on that answer. So a failover to that replica keeps the lease of every
 * attempt in flight, and the new primary gives its slot and its record to nobody else while the attempt runs (a
 * sequential endpoint keeps one attempt at a time, any endpoint its `max_concurrency`). A lease whose answer never came
 * holds no attempt; it is given back when the worker's liveness session opens again (release.ts). docs/production.md,
 * "On a Postgres HA cluster", says what a claim committed asynchronously did at a failover.
 */

/** Slack beyond the request timeout before a lease (slot and record) counts as abandoned by a crashed worker. */
export const LEASE_SLACK_MS = 30_000;

/** How long a drainer holds a slot and its record for one attempt made with this request timeout. */
export function leaseMsFor(timeoutMs: number): number {
  return timeoutMs + LEASE_SLACK_MS;
}

/** Who leases, for how long: `owner` is the worker process (worker_processes.id), whose crash frees its leases. */
export type Lease = { leaseMs: number; owner: string };
