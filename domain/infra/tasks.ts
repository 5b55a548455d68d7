/**
 * The graphile-worker tasks of the service. Webhook deliveries are not among them: drainers claim them straight from
 * webhook_deliveries (domain/webhooks/engine/engine.ts; docs/webhooks.md, "Fair delivery under backlog" says why).
 */
export const TASKS = {
  retryWire: "retry_wire",
  /** Decides a company's delivery records whose filter its filter time deferred (docs/webhooks.md). */
  decideFilters: "decide_filters",
  /** Does nothing: the ceiling `deno task bench` measures deliveries against. */
  noop: "noop",
  /**
   * The drain jobs of versions before sql/0023: such a job still queued at the upgrade runs as a no-op, its records
   * being claimed by the drainers.
   */
  deliverWebhook: "deliver_webhook",
} as const;
