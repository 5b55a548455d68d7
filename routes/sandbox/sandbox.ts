/** Gathers the sandbox's route files into the one router the app mounts when SANDBOX is on (docs/sandbox.md). */

import type { Deps } from "../../domain/infra/deps.ts";
import { newRouter } from "../openapi/router.ts";
import { sandboxPaymentRoutes } from "./payments.ts";
import { sandboxSubjectRoutes } from "./subjects.ts";
import { sandboxSubscriptionRoutes } from "./subscriptions.ts";
import { sandboxTestClockRoutes } from "./test_clocks.ts";
import { sandboxTestDocumentRoutes } from "./test_documents.ts";
import { sandboxTransactionRoutes } from "./transactions.ts";

/**
 * The sandbox API (docs/sandbox.md), served only when SANDBOX is on: each call plays the payment rails or the back
 * office through the same domain functions a real integration calls, so the events are the real ones.
 */
export function sandboxRoutes(deps: Deps) {
  return newRouter()
    .route("/", sandboxPaymentRoutes(deps))
    .route("/", sandboxSubjectRoutes(deps))
    .route("/", sandboxSubscriptionRoutes(deps))
    .route("/", sandboxTestClockRoutes(deps))
    .route("/", sandboxTransactionRoutes(deps))
    .route("/", sandboxTestDocumentRoutes());
}
