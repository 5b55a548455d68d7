/** The worker task that retries a wire once its destination account was corrected (`PUT .../update_bank_account`). */

import type { Task } from "graphile-worker";
import { retryWire } from "../domain/rails/wires.ts";
import type { Deps } from "../domain/infra/deps.ts";
import { log } from "../domain/basics/log.ts";

type Payload = { company_id: string; wire_id: string };

/**
 * Retries a wire after its destination account was corrected. The sandbox rails accept it at once: the wire is
 * sent and `wire_created` emitted. A wire no longer waiting for confirmation (already retried) is left alone.
 */
export function retryWireTask({ sql }: Deps): Task {
  return async (payload) => {
    const { company_id: companyId, wire_id: wireId } = payload as Payload;
    const sent = await sql.begin((tx) => retryWire(tx, companyId, wireId));
    log.info("wire retried", { wire_id: wireId, sent });
  };
}
