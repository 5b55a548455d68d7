/**
 * The Postgres settings the service depends on but does not own, checked at start: a server it cannot work well on
 * is said in the log, once, naming the setting (docs/production.md, "Postgres settings"). A warning, not a refusal:
 * the service still works, and the operator may have a reason.
 */

import { log } from "../basics/log.ts";
import type { Sql } from "./db.ts";

/**
 * Warns when autovacuum is off: the delivery records and their slots are updated several times each, and nothing
 * else removes the old versions, so every claim reads past more of them. Measured: a sequential endpoint fell behind a
 * steady 40 pay-ins/s after 8 minutes (docs/performance.md, "Sustained load").
 */
export async function warnAboutSettings(sql: Sql): Promise<void> {
  const [{ autovacuum }] = await sql<{ autovacuum: string }[]>`select current_setting('autovacuum') as autovacuum`;
  if (autovacuum !== "on") {
    log.warn(
      "autovacuum is off on this Postgres: the old versions of updated delivery records are never removed, and " +
        'deliveries slow down within minutes under load (docs/production.md, "Postgres settings")',
    );
  }
}
