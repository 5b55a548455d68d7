import type { TaskList } from "graphile-worker";
import type { Deps } from "../domain/platform/deps.ts";
import { deliverWebhookTask } from "./deliver_webhook.ts";
import { retryWireTask } from "./retry_wire.ts";

/** Every background task of the service, by graphile-worker task name. */
export function taskList(deps: Deps): TaskList {
  return {
    // A task that does nothing: the ceiling `deno task bench` measures the delivery task against.
    noop: async () => {},
    deliver_webhook: deliverWebhookTask(deps),
    retry_wire: retryWireTask(deps),
  };
}
