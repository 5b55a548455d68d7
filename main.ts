/**
 * The service's process (`deno task start`): puts it together in the order docs/architecture.md gives ("Start-up and
 * shutdown"), and stops it on SIGTERM or SIGINT. A refused start is one line and exit 1 (`StartupError`).
 */
import { createApp } from "./routes/app.ts";
import { taskList, upkeep } from "./jobs/index.ts";
import type { Config } from "./domain/infra/config.ts";
import { loadConfigWithLocalSecrets, SECRETS_DIR } from "./domain/infra/local_secrets.ts";
import { warnAboutSettings } from "./domain/infra/postgres_settings.ts";
import { connect, ensureDatabase, isConnectionLayerFault, serverAnswers, type Sql } from "./domain/infra/db.ts";
import { startTracing } from "./domain/infra/tracing.ts";
import { type EmbeddedPostgres, startEmbeddedPostgres } from "./domain/infra/embedded_pg.ts";
import { flushLogs, log, setLogLevel } from "./domain/basics/log.ts";
import { ensurePartitions } from "./domain/webhooks/endpoints/retention.ts";
import { migrate } from "./domain/infra/migrate.ts";
import { secretBoxFor } from "./domain/infra/secret_box.ts";
import { sealStoredSecrets } from "./domain/webhooks/endpoints/credentials.ts";
import { sealStoredAnswers } from "./domain/requests/idempotency.ts";
import { startWorker, stopWorker, type Worker } from "./domain/infra/worker.ts";
import { VERSION } from "./domain/infra/version.ts";

const SHUTDOWN_GRACE_MS = 10_000;

/** A start that cannot go on for a reason the operator can fix: said in one line, exit 1, no stack trace. */
export class StartupError extends Error {}

type Handler = (req: Request, info: Deno.ServeHandlerInfo<Deno.NetAddr>) => Response | Promise<Response>;

const starting: Handler = () =>
  new Response(JSON.stringify({ status: "starting" }), {
    status: 503,
    headers: { "content-type": "application/json" },
  });

/**
 * Takes the port before anything else starts, so a port in use stops the start before the database, the
 * migrations or the worker are touched. Until the app is ready every request answers 503. Header and idle timeouts and
 * the connection bound are the reverse proxy's: the in-process ways cost too much throughput (docs/production.md).
 */
function bind(config: Config) {
  let handler: Handler = starting;
  try {
    const server = Deno.serve(
      { port: config.port, hostname: config.host, onListen: () => {} },
      (req, info) => handler(req, info),
    );
    return {
      server,
      ready: (app: Handler) => handler = app,
      // while draining, each answer closes its connection: a client's next request goes back through the load
      // balancer, to an instance that stays, instead of down a kept-alive socket about to close
      drain: () => {
        const app = handler;
        handler = async (req, info) => {
          const res = await app(req, info);
          const headers = new Headers(res.headers); // a Response's own headers may be immutable
          headers.set("connection", "close");
          return new Response(res.body, { status: res.status, statusText: res.statusText, headers });
        };
      },
    };
  } catch (err) {
    if (err instanceof Deno.errors.AddrInUse) {
      throw new StartupError(
        `port ${config.port} on ${config.host} is already in use: stop what listens there or set PORT`,
      );
    }
    throw err;
  }
}

/** Migrates, starts the worker and serves; resolves with a `stop` that shuts everything down in order. */
export async function start(config: Config) {
  setLogLevel(config.logLevel);
  if (config.jwtSecretGenerated) {
    log.info("JWT_SECRET is not set: tokens are signed with the secret generated for this machine", {
      dir: SECRETS_DIR,
    });
  }
  if (!config.appEnvGiven) log.warn(developmentByDefault(config));
  if (config.appEnv === "production" && config.sandbox) {
    log.warn("SANDBOX is on in production: integrators can fabricate pay-ins and pay-outs that send real webhooks");
  }
  // not a refusal: a rolling upgrade goes on, and only making a portal link needs it (docs/production.md)
  if (config.appEnv === "production" && config.publicBaseUrl === null) {
    log.warn("PUBLIC_BASE_URL is not set: portal links are refused (503) until it is");
  }
  const { server, ready, drain } = bind(config);

  let embedded: EmbeddedPostgres | null = null;
  let url = config.databaseUrl;
  if (url === "embedded" || (!config.databaseUrlExplicit && !(await serverAnswers(url)))) {
    embedded = await startEmbeddedPostgres();
    url = embedded.url;
  }
  // which Postgres a start used, in one line: a fresh checkout may have found one on 5432 or started its own
  log.info("postgres", {
    server: embedded ? "embedded" : config.databaseUrlExplicit ? "DATABASE_URL" : "local",
    url: withoutCredentials(url),
    ...embedded ? { dir: embedded.dir } : {},
  });
  await ensureDatabase(url);
  const sql = connect(url, { max: 10 });
  traceIfConfigured(config, sql);
  await migrate(sql, url);
  await warnAboutSettings(sql);
  // the days to come of the webhook history, should the service have been down past the ones made ahead
  await ensurePartitions(sql);
  // Before anything reads them: secrets written before they were sealed at rest, in plain text until now, and the
  // stored answers of idempotent requests (which may carry them) that an earlier version kept in plain text.
  const box = await secretBoxFor(config);
  await sealStoredSecrets(sql, box, { reseal: false });
  await sealStoredAnswers(sql, box, { reseal: false });

  let worker: Worker | null = null;
  let draining = false;
  const stopping = new AbortController();
  const deps = {
    sql,
    config,
    processId: crypto.randomUUID(),
    workerRunning: () => worker !== null,
    draining: () => draining,
    stopping: stopping.signal,
  };
  if (config.worker) {
    worker = await startWorker(url, config.workerConcurrency, taskList(deps), upkeep(deps));
  }

  const app = createApp(deps);
  ready(app.fetch);
  log.info("listening", {
    version: VERSION,
    host: server.addr.hostname,
    port: server.addr.port,
    env: config.appEnv,
    worker: config.worker,
  });

  /**
   * Hands the instance over (docs/production.md, "Upgrading"): from the first moment `/readyz` answers 503 and no new
   * delivery starts here (those in flight finish, the lanes go to the other instances); requests are still served for
   * `drainMs`, the time a load balancer's health check takes to see the instance go; then the socket closes once the
   * requests in flight are answered. All of it within SHUTDOWN_GRACE_MS after the drain.
   */
  const stop = async ({ drainMs = 0 }: { drainMs?: number } = {}) => {
    draining = true;
    stopping.abort();
    drain();
    const handedOver = (async () => {
      if (worker) await stopWorker(worker);
      worker = null;
    })();
    if (drainMs > 0) await new Promise((resolve) => setTimeout(resolve, drainMs));
    let timer: ReturnType<typeof setTimeout> | undefined;
    const deadline = new Promise((resolve) => timer = setTimeout(resolve, SHUTDOWN_GRACE_MS));
    await Promise.race([Promise.all([server.shutdown(), handedOver]), deadline]);
    clearTimeout(timer);
    await sql.end({ timeout: 2 });
    if (embedded) await embedded.stop();
  };
  return { server, stop, sql, app };
}

/**
 * What a start without APP_ENV allows, said once: such a start runs as development, which an operator who set only
 * the secrets did not ask for (docs/production.md, "What to set").
 */
export function developmentByDefault(config: Config): string {
  const allows = [
    config.sandbox ? "the sandbox routes (/api/sandbox: made-up pay-ins and pay-outs with real webhooks)" : null,
    config.allowPrivateUrls
      ? "webhook endpoints at http:// and loopback or private addresses (WEBHOOK_ALLOW_PRIVATE_URLS)"
      : null,
  ].filter((part) => part !== null);
  return `APP_ENV is not set: running as development${
    allows.length ? `, which serves ${allows.join(" and ")}` : ""
  }; ` +
    "set APP_ENV=production for a deployment, or APP_ENV=development to say this is one";
}

/** Tracing, when OTEL_DENO=true, said in one line: where spans go, or why none are made (docs/production.md). */
function traceIfConfigured(config: Config, sql: Sql) {
  const { enabled, endpoint, protocol, serviceName } = config.tracing;
  if (!enabled) return;
  if (startTracing(true, sql)) {
    log.info("tracing", {
      endpoint: endpoint ? withoutCredentials(endpoint) : "http://localhost:4318 (default)",
      protocol,
      service: serviceName,
    });
  } else log.warn("OTEL_DENO=true but this runtime records no spans: tracing is off");
}

/** The URL as a log may show it: scheme, hosts, ports and database, never the user's password (nor the user). */
export function withoutCredentials(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^@/?#]*@/i, "$1").replace(/[?#].*$/, "");
}

async function startOrExit(config: Config) {
  try {
    return await start(config);
  } catch (err) {
    if (!(err instanceof StartupError)) throw err;
    log.error("cannot start", { reason: err.message });
    flushLogs();
    Deno.exit(1);
  }
}

if (import.meta.main) {
  // a refused configuration is one clear message naming the variable, not a stack trace
  const config = await loadConfigWithLocalSecrets().catch((err) => {
    console.error(err instanceof Error ? err.message : String(err));
    Deno.exit(1);
  });
  const service = await startOrExit(config);
  let stopping = false;
  const onSignal = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    // SIGTERM is how an orchestrator or an operator ends an instance behind a load balancer: drain first. SIGINT is a
    // person at a terminal: no wait.
    const drainMs = signal === "SIGTERM" ? config.shutdownDrainMs : 0;
    log.info("shutting down", { signal, version: VERSION, drain_ms: drainMs });
    await service.stop({ drainMs });
    log.info("stopped");
    flushLogs();
    Deno.exit(0);
  };
  // A database restart must not end the process (docs/operations.md, "When the database goes away").
  const survive = (event: Event, err: unknown) => {
    if (!isConnectionLayerFault(err)) return;
    event.preventDefault();
    log.warn("database connection error outside a request", {
      error: err instanceof Error ? err.message : String(err),
    });
  };
  globalThis.addEventListener("unhandledrejection", (e) => survive(e, e.reason));
  globalThis.addEventListener("error", (e) => survive(e, e.error));
  Deno.addSignalListener("SIGINT", () => onSignal("SIGINT"));
  Deno.addSignalListener("SIGTERM", () => onSignal("SIGTERM"));
}
