/** The `Deps` handed to routes and jobs: kept apart so that a file needing only its type imports nothing else. */

import type { Config } from "./config.ts";
import type { Sql } from "./db.ts";

/** What routes and jobs need from the running service, handed in by `main.ts`. */
export type Deps = {
  sql: Sql;
  config: Config;
  /** This process, as registered in `worker_processes`; webhook leases carry it so a crash frees them at once. */
  processId: string;
  workerRunning?: () => boolean;
  /** True from SIGTERM on: `/readyz` answers 503 so a load balancer stops sending (docs/production.md, "Upgrading"). */
  draining?: () => boolean;
  /** Aborted at SIGTERM: a pull stream's long poll answers at once, a live stream closes (docs/webhooks.md). */
  stopping?: AbortSignal;
};
