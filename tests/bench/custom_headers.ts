/**
 * `BENCH_ONLY=headers`: what an endpoint's custom headers cost its deliveries (docs/webhooks.md, "Custom headers").
 * Two companies, each with one endpoint at the same receiver (a process of its own): one without custom headers, one
 * with five (four plain, one secret, opened per attempt). Each round queues a backlog for one of them with the worker
 * stopped, then times its delivery from a full queue, as the webhooks phase's backlog figure does; the two alternate
 * (ABBA) so that a pause of the machine falls on both, and the median round of each is reported.
 */
import { createEndpoint } from "../../domain/webhooks/endpoints/endpoints.ts";
import { secretBoxFor } from "../../domain/infra/secret_box.ts";
import { type Figures, round } from "./figures.ts";
import { benchBase, emitMany, startReceiver, waitForDrained } from "./webhooks.ts";

const EVENTS = Number(Deno.env.get("BENCH_HEADERS_EVENTS") ?? 4_000);
const ROUNDS = Number(Deno.env.get("BENCH_HEADERS_ROUNDS") ?? 4);

/** Five headers of the sizes a gateway asks for: a tenant, a region, a route, a version, and an API key (secret). */
const FIVE = {
  headers: { "X-Tenant": "acme-payments", "X-Region": "sa-east-1", "X-Route": "payments/webhooks", "X-Version": "4" },
  secret_headers: { "X-Api-Key": "k_live_8f14e45fceea167a5a36dedd4bea2543" },
};

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

export async function benchCustomHeaders(): Promise<Figures> {
  const { sql, config, start, stop, close } = await benchBase();
  const receiver = await startReceiver();
  try {
    const box = await secretBoxFor(config);
    const quota = { endpoints: config.limits.endpointsPerCompany, concurrency: config.limits.concurrencyPerCompany };
    const companies = { none: crypto.randomUUID(), five: crypto.randomUUID() };
    for (const [side, id] of Object.entries(companies)) {
      await sql`insert into companies (id) values (${id})`;
      const settings = side === "five" ? FIVE : {};
      await createEndpoint(sql, id, { url: receiver.url, max_concurrency: 100, ...settings }, {
        allowPrivateUrls: true,
        quota,
        box,
      });
    }
    const perSecond = { none: [] as number[], five: [] as number[] };
    const backlog = async (side: keyof typeof companies) => {
      await stop();
      await emitMany(sql, companies[side], EVENTS);
      await receiver.reset();
      const t0 = performance.now();
      await start();
      await receiver.until(EVENTS);
      const rate = EVENTS / ((performance.now() - t0) / 1000);
      await waitForDrained(sql);
      return rate;
    };
    for (let r = 0; r < ROUNDS; r++) {
      const order = r % 2 ? ["five", "none"] as const : ["none", "five"] as const;
      for (const side of order) perSecond[side].push(await backlog(side));
    }
    await stop();
    const [{ failed }] = await sql<{ failed: number }[]>`
      select count(*)::int as failed from webhook_deliveries where status <> 'succeeded'`;
    const none = median(perSecond.none);
    const five = median(perSecond.five);
    return {
      headers_events_per_round: EVENTS,
      headers_none_deliveries_per_s: round(none, 0),
      headers_five_deliveries_per_s: round(five, 0),
      headers_five_vs_none: round(five / none, 2),
      headers_deliveries_not_succeeded: failed,
    };
  } finally {
    await receiver.close();
    await close();
  }
}
