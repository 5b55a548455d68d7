/**
 * mTLS (`BENCH_ONLY=mtls`): deliveries/s from a full queue to an https receiver that requires a client certificate,
 * beside those to a plain https receiver in the same run (docs/webhooks.md, "Client certificates (mTLS)"). Both keep
 * their connections, so the certificate costs once per connection, not per attempt: the figure says whether that
 * holds. A phase of its own so that it runs alone, without the whole webhooks phase.
 */
import { createEndpoint } from "../../domain/webhooks/endpoints/endpoints.ts";
import { secretBoxFor } from "../../domain/infra/secret_box.ts";
import {
  benchBase,
  CLIENT_CERTIFICATE,
  emitMany,
  LOOPBACK_CA_PATH,
  startReceiver,
  waitForDrained,
} from "./webhooks.ts";
import { type Figures, round } from "./figures.ts";

const EVENTS = Number(Deno.env.get("BENCH_MTLS_EVENTS") ?? 5_000);

export async function benchMtls(): Promise<Figures> {
  // the worker's node:https trusts the receivers' test authority (tests/fixtures/tls/README.md), read at the first
  // TLS connection
  Deno.env.set("NODE_EXTRA_CA_CERTS", LOOPBACK_CA_PATH);
  const { sql, config, start, stop, close } = await benchBase();
  // the same node:https server on both sides, one requiring the certificate: the difference is the certificate's
  const plain = await startReceiver(0, { nodeTls: true });
  const mutual = await startReceiver(0, { mtls: true });
  try {
    const quota = { endpoints: config.limits.endpointsPerCompany, concurrency: config.limits.concurrencyPerCompany };
    const opts = { allowPrivateUrls: true, quota, box: await secretBoxFor(config) };
    /** A company of its own with one endpoint at `url`; deliveries/s of a backlog of EVENTS to it. */
    const backlog = async (receiver: typeof plain, settings: Record<string, unknown>) => {
      const companyId = crypto.randomUUID();
      await sql`insert into companies (id) values (${companyId})`;
      await createEndpoint(sql, companyId, { url: receiver.url, max_concurrency: 100, ...settings }, opts);
      await stop();
      await emitMany(sql, companyId, EVENTS);
      const t0 = performance.now();
      await start();
      await receiver.until(EVENTS);
      const perSecond = EVENTS / ((performance.now() - t0) / 1000);
      await waitForDrained(sql);
      return perSecond;
    };
    const https = await backlog(plain, {});
    const mtls = await backlog(mutual, { client_certificate: CLIENT_CERTIFICATE });
    return {
      mtls_events_per_run: EVENTS,
      mtls_https_deliveries_per_s: round(https, 0),
      mtls_deliveries_per_s: round(mtls, 0),
      mtls_vs_https: round(mtls / https, 2),
    };
  } finally {
    await Promise.all([plain.close(), mutual.close()]);
    await close();
  }
}
