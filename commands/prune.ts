/**
 * `deno task prune`: removes now the webhook history older than EVENT_RETENTION_DAYS, as the hourly job does, and
 * prints what went. Safe beside running instances: one pruner runs at a time.
 */

import { loadConfigWithLocalSecrets } from "../domain/infra/local_secrets.ts";
import { pruneHistory } from "../domain/webhooks/endpoints/retention.ts";
import { retireStreamLog } from "../domain/webhooks/streams/streams.ts";
import { openDatabase } from "./database.ts";

const config = await loadConfigWithLocalSecrets();
const { sql, close } = await openDatabase(config);
try {
  const started = performance.now();
  const pruned = await pruneHistory(sql, { retentionDays: config.eventRetentionDays });
  const streamRows = await retireStreamLog(sql, new Date(Date.now() - config.eventRetentionDays * 86_400_000));
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  console.log(`retention ${config.eventRetentionDays} day(s), ${seconds} s`);
  console.log(
    `partitions dropped: ${pruned.partitions_dropped.length ? pruned.partitions_dropped.join(", ") : "none"}`,
  );
  console.log(`delivery records deleted: ${pruned.deliveries}`);
  console.log(`pull streams' log rows deleted: ${streamRows}`);
  console.log(`endpoint stats minutes deleted: ${pruned.stats_rows}`);
  console.log(`transaction search rows deleted: ${pruned.transaction_rows}`);
} finally {
  await close();
}
