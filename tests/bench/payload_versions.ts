/**
 * `BENCH_ONLY=payload_versions`: what a payload version costs per delivery attempt (docs/webhooks.md, "Payload
 * versions"), in process. Each figure times `renderBody` for one snapshot body of a bank transaction: an endpoint that
 * names no version (the first, what every endpoint made before versions gets) against the renderer before versions,
 * one pinned to the first version, and
 * one pinned to the latest (a body built in the latest shape is stepped down to the pinned one). The three run in
 * alternating rounds, so that a pause of the machine falls on each; the median round is reported. A file of its own:
 * one phase, selected by its BENCH_ONLY name.
 */
import { renderBody } from "../../domain/webhooks/engine/body.ts";
import { FIRST_PAYLOAD_VERSION, LATEST_PAYLOAD_VERSION } from "../../domain/webhooks/outbox/payload_versions.ts";
import { catalogueEntry } from "../../domain/webhooks/outbox/catalogue.ts";
import { type Figures, round } from "./figures.ts";

const ROUNDS = 7;
const PER_ROUND = 20_000;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** µs per call of `f` over `n` calls. */
function microsPerCall(n: number, f: (i: number) => unknown): number {
  const start = performance.now();
  for (let i = 0; i < n; i++) f(i);
  return ((performance.now() - start) * 1000) / n;
}

export function benchPayloadVersions(): Figures {
  const { example } = catalogueEntry("non_identified_bank_transaction");
  const occurredAt = new Date("2026-11-27T10:00:00.123Z");
  const settings = (payload_version: string | null) => ({
    event_payload_type: "snapshot" as const,
    wrap_in_notification: false,
    inject_secret_in_body: false,
    event_mapping: null,
    secret: "",
    payload_version,
  });
  const render = (s: ReturnType<typeof settings>) => (i: number) =>
    renderBody(s, { id: `${i}`, type: example.type, data: example.data, occurredAt });
  const phases = {
    // the renderer before versions, for this body: what an unpinned endpoint paid
    before: (i: number) => JSON.stringify({ id: `${i}`, type: example.type, data: example.data }),
    unpinned: render(settings(null)),
    first: render(settings(FIRST_PAYLOAD_VERSION)),
    latest: render(settings(LATEST_PAYLOAD_VERSION)),
  };
  // what is measured is what is sent: the pinned body lacks the latest's field, the latest body has it
  if (phases.first(0).includes('"timestamp"') || !phases.latest(0).includes('"timestamp"')) {
    throw new Error("the versions render the same body: the bench measures nothing");
  }
  for (let i = 0; i < 20_000; i++) Object.values(phases).forEach((f) => f(i)); // warm-up
  const rounds = { before: [] as number[], unpinned: [] as number[], first: [] as number[], latest: [] as number[] };
  for (let r = 0; r < ROUNDS; r++) {
    for (const name of ["before", "unpinned", "first", "latest"] as const) {
      rounds[name].push(microsPerCall(PER_ROUND, phases[name]));
    }
  }
  const latestUs = median(rounds.latest);
  const firstUs = median(rounds.first);
  return {
    payload_render_before_versions_us: round(median(rounds.before), 2),
    payload_render_unpinned_us: round(median(rounds.unpinned), 2),
    payload_render_first_us: round(firstUs, 2),
    payload_render_latest_us: round(latestUs, 2),
    payload_render_first_vs_latest_x: round(firstUs / latestUs, 2),
  };
}
