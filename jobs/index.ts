import type { TaskList } from "graphile-worker";
import type { Deps } from "../domain/platform/deps.ts";
import { TASKS } from "../domain/webhooks/queue.ts";
import { deliverWebhookTask } from "./deliver_webhook.ts";
import { retryWireTask } from "./retry_wire.ts";

/** Every background task of the service, by graphile-worker task name. */
export function taskList(deps: Deps): TaskList {
  return {
    [TASKS.noop]: async () => {},
    [TASKS.deliverWebhook]: deliverWebhookTask(deps),
    [TASKS.retryWire]: retryWireTask(deps),
  };
}
