/**
 * The database the operator's commands write to, opened as `deno task start` would open it. Shared by the commands,
 * so every one finds the same database the service uses.
 */

import type { Config } from "../domain/infra/config.ts";
import { connect, ensureDatabase, serverAnswers, type Sql } from "../domain/infra/db.ts";
import { EMBEDDED_PORT, startEmbeddedPostgres } from "../domain/infra/embedded_pg.ts";
import { migrate } from "../domain/infra/migrate.ts";

/**
 * The database `deno task start` would use, for the commands that write to it: DATABASE_URL, else the server at
 * the default address, else the embedded one (the service's own when it runs, started for the command otherwise).
 * Migrated, so a command run before the service's first start works. `close` ends the connection (and the embedded
 * server when the command started it).
 */
export async function openDatabase(config: Config): Promise<{ sql: Sql; close: () => Promise<void> }> {
  let url = config.databaseUrl;
  let stopEmbedded = async () => {};
  if (url === "embedded" || (!config.databaseUrlExplicit && !(await serverAnswers(url)))) {
    const running = `postgres://postgres:postgres@127.0.0.1:${EMBEDDED_PORT}/payments`;
    if (await serverAnswers(running)) url = running;
    else {
      const embedded = await startEmbeddedPostgres();
      url = embedded.url;
      stopEmbedded = embedded.stop;
    }
  }
  await ensureDatabase(url);
  const sql = connect(url, { max: 1 });
  await migrate(sql, url);
  return {
    sql,
    close: async () => {
      await sql.end();
      await stopEmbedded();
    },
  };
}
