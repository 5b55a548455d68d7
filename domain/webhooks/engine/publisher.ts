/**
 * One delivery attempt to a broker endpoint (docs/webhooks.md, "Destinations"): the delivery rendered and signed as
 * for HTTP (sender.ts, `signedDelivery`), published as one message over the company's kept connection
 * (broker_connections.ts), the broker's acknowledgement recorded as the attempt's answer. What `sendDelivery` is to an
 * https endpoint; the engine picks one by the endpoint's transport.
 */

import type { SecretBox } from "../../infra/secret_box.ts";
import type { EndpointRow } from "../endpoints/endpoint_row.ts";
import { endpointTarget, openBrokerCredentials } from "../endpoints/brokers.ts";
import { BlockedDestination } from "../endpoints/url_guard.ts";
import { BrokerFailure } from "../destinations/transport.ts";
import { tracedAttempt } from "./attempt_trace.ts";
import type { BrokerConnections } from "./broker_connections.ts";
import { cleared, type DeliveryToSend, describeFailure, type SendResult, signedDelivery } from "./sender.ts";

export type PublishOptions = {
  /** The attempt's bound, as an HTTP attempt's: opening a connection and waiting for the acknowledgement. */
  timeoutMs: number;
  brokers: BrokerConnections;
  signal?: AbortSignal;
};

/**
 * Publishes one delivery to its endpoint's broker and waits for the acknowledgement. Never throws but where
 * `sendDelivery` does (a secret that does not open). The attempt's `http_status` is 0 (no HTTP answer): success is
 * `ok`, and `response_body` holds what the broker answered (`confirmed by exchange payments`, `PubAck stream PAYMENTS
 * seq 42`, ...) or why it did not; a permanent refusal (`permanent`) disables the endpoint as a 410 does.
 */
export async function publishDelivery(
  box: SecretBox,
  endpoint: EndpointRow,
  delivery: DeliveryToSend,
  opts: PublishOptions,
): Promise<SendResult> {
  const started = performance.now();
  const signed = await signedDelivery(box, endpoint, delivery);
  const credentials = await openBrokerCredentials(box, endpoint.id, endpoint.sealed_broker_credentials);
  const target = endpointTarget(endpoint);
  const timeout = AbortSignal.timeout(opts.timeoutMs);
  const signal = opts.signal ? AbortSignal.any([timeout, opts.signal]) : timeout;
  const result = (ok: boolean, responseBody: string, permanent = false): SendResult => ({
    ok,
    httpStatus: 0,
    responseBody,
    durationMs: performance.now() - started,
    responseHeaders: {},
    retryAfterSeconds: null,
    ...(permanent ? { permanent } : {}),
  });
  return await tracedAttempt(endpoint, delivery, async (trace) => {
    try {
      if (!target || !endpoint.destination) return result(false, "refused: the endpoint names no broker destination");
      const ack = await opts.brokers.publish(
        endpoint.company_id,
        target,
        credentials,
        endpoint.destination,
        {
          id: delivery.id,
          // `{type}` is the name the body carries: the endpoint's rename when it has one
          type: endpoint.event_mapping?.[delivery.type] ?? delivery.type,
          body: signed.body,
          headers: { ...signed.headers, ...trace },
        },
        signal,
      );
      return cleared(result(true, ack.answer), signed.echoed);
    } catch (err) {
      if (timeout.aborted) return result(false, `timeout after ${opts.timeoutMs} ms`);
      if (opts.signal?.aborted) return result(false, "aborted: the worker is shutting down");
      if (err instanceof BrokerFailure) return cleared(result(false, err.message, err.permanent), signed.echoed);
      if (err instanceof BlockedDestination) return result(false, err.message);
      return result(false, describeFailure(err));
    }
  });
}
