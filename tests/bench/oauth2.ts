/**
 * `BENCH_ONLY=oauth2`: what OAuth2 client credentials cost per delivery (docs/webhooks.md, "OAuth2 client
 * credentials"). The same backlog is delivered from a full queue to the same receiver twice in one run: once to a plain
 * endpoint, once to an endpoint with OAuth2, whose token comes from a token server on loopback in this process (it
 * counts its requests: with the cache, one per run). Its own module because it owns the token server.
 */
import { emitEvent } from "../../domain/webhooks/outbox/events.ts";
import { createEndpoint } from "../../domain/webhooks/endpoints/endpoints.ts";
import { secretBoxFor } from "../../domain/infra/secret_box.ts";
import type { Sql } from "../../domain/infra/db.ts";
import { type Figures, round } from "./figures.ts";
import { benchBase, startReceiver } from "./webhooks.ts";

const EVENTS = Number(Deno.env.get("BENCH_OAUTH2_EVENTS") ?? 5_000);
const PRODUCERS = 8;

/** `total` events for `companyId`, one per transaction, as producers emit them. */
async function emitBacklog(sql: Sql, companyId: string, total: number) {
  let next = 0;
  await Promise.all(Array.from({ length: PRODUCERS }, async () => {
    while (next++ < total) {
      await sql.begin((tx) => emitEvent(tx, companyId, "identified", { transaction_id: crypto.randomUUID() }));
    }
  }));
}

export async function benchOAuth2(): Promise<Figures> {
  const { sql, config, start, stop, close } = await benchBase();
  let tokenRequests = 0;
  const tokenServer = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    await req.text();
    tokenRequests++;
    return Response.json({ access_token: crypto.randomUUID(), token_type: "Bearer", expires_in: 3600 });
  });
  const receiver = await startReceiver();
  try {
    const quota = { endpoints: config.limits.endpointsPerCompany, concurrency: config.limits.concurrencyPerCompany };
    const box = await secretBoxFor(config);
    /** A backlog of EVENTS to a new company's endpoint with `settings`, delivered from a full queue: deliveries/s. */
    const backlog = async (settings: Parameters<typeof createEndpoint>[2]["oauth2"]) => {
      const companyId = crypto.randomUUID();
      await sql`insert into companies (id) values (${companyId})`;
      await createEndpoint(sql, companyId, { url: receiver.url, max_concurrency: 100, oauth2: settings }, {
        allowPrivateUrls: true,
        quota,
        box,
      });
      await stop();
      await emitBacklog(sql, companyId, EVENTS);
      await receiver.reset();
      const t0 = performance.now();
      await start();
      await receiver.until(EVENTS);
      const perSecond = EVENTS / ((performance.now() - t0) / 1000);
      await stop();
      // one endpoint per company and URL: the next phase's endpoint is another company's
      return perSecond;
    };
    const { port } = tokenServer.addr as Deno.NetAddr;
    const plain = await backlog(null);
    const oauth2 = await backlog({
      token_url: `http://127.0.0.1:${port}/token`,
      client_id: "bench",
      client_secret: "bench-secret",
    });
    return {
      oauth2_events_per_phase: EVENTS,
      oauth2_plain_deliveries_per_s: round(plain, 0),
      oauth2_deliveries_per_s: round(oauth2, 0),
      oauth2_vs_plain: round(oauth2 / plain, 2),
      oauth2_token_requests: tokenRequests,
    };
  } finally {
    await receiver.close();
    await tokenServer.shutdown();
    await close();
  }
}
