import { createApp } from "./routes/app.ts";
import { identifyRegisteredPayers } from "./domain/rails/bank_transactions.ts";
import { releaseDeadLeases, wakeStalledEndpoints } from "./domain/webhooks/recovery.ts";
import { taskList } from "./jobs/index.ts";
import { type Config, loadConfig } from "./domain/platform/config.ts";
import { connect, ensureDatabase, serverAnswers } from "./domain/platform/db.ts";
import { type EmbeddedPostgres, startEmbeddedPostgres } from "./domain/platform/embedded_pg.ts";
import { flushLogs, log, setLogLevel } from "./domain/platform/log.ts";
import { migrate } from "./domain/platform/migrate.ts";
import { secretBoxFor } from "./domain/platform/secret_box.ts";
import { sealStoredSecrets } from "./domain/webhooks/endpoints.ts";
import { startWorker, stopWorker, type Worker } from "./domain/platform/worker.ts";

const SHUTDOWN_GRACE_MS = 10_000;

/** Migrates, starts the worker and serves; resolves with a `stop` that shuts everything down in order. */
export async function start(config: Config) {
  setLogLevel(config.logLevel);
  if (config.jwtSecretIsDefault) log.warn("JWT_SECRET is not set: using the development secret");

  let embedded: EmbeddedPostgres | null = null;
  let url = config.databaseUrl;
  if (url === "embedded" || (!config.databaseUrlExplicit && !(await serverAnswers(url)))) {
    embedded = await startEmbeddedPostgres();
    url = embedded.url;
  }
  await ensureDatabase(url);
  const sql = connect(url, { max: 10 });
  await migrate(sql, url);
  // Before anything reads them: secrets written before they were sealed at rest, in plain text until now.
  await sealStoredSecrets(sql, await secretBoxFor(config), { reseal: false });

  let worker: Worker | null = null;
  const deps = { sql, config, processId: crypto.randomUUID(), workerRunning: () => worker !== null };
  if (config.worker) {
    worker = await startWorker(url, config.workerConcurrency, taskList(deps), {
      processId: deps.processId,
      onDeadProcesses: (ids) => releaseDeadLeases(sql, ids),
      onSweep: () => Promise.all([wakeStalledEndpoints(sql), identifyRegisteredPayers(sql)]),
    });
  }

  const app = createApp(deps);
  const server = Deno.serve({
    port: config.port,
    hostname: config.host,
    onListen: ({ hostname, port }) => log.info("listening", { host: hostname, port, worker: config.worker }),
  }, app.fetch);

  const stop = async () => {
    const deadline = new Promise((resolve) => setTimeout(resolve, SHUTDOWN_GRACE_MS));
    await Promise.race([
      (async () => {
        await server.shutdown();
        if (worker) await stopWorker(worker);
        worker = null;
      })(),
      deadline,
    ]);
    await sql.end({ timeout: 2 });
    if (embedded) await embedded.stop();
  };
  return { server, stop, sql, app };
}

if (import.meta.main) {
  const service = await start(loadConfig());
  let stopping = false;
  const onSignal = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info("shutting down", { signal });
    await service.stop();
    log.info("stopped");
    flushLogs();
    Deno.exit(0);
  };
  Deno.addSignalListener("SIGINT", () => onSignal("SIGINT"));
  Deno.addSignalListener("SIGTERM", () => onSignal("SIGTERM"));
}
