/**
 * The tracing of delivery attempts (docs/webhooks.md, "Tracing"): a span per attempt in the trace of the request that
 * emitted the event. Its own file so that OpenTelemetry stays out of sender.ts.
 */

import { SpanKind, SpanStatusCode } from "@opentelemetry/api";
import { inSpan } from "../../infra/tracing.ts";

/**
 * One span per delivery attempt, child of the span of the request that emitted the event (its `traceparent`, stored
 * with the event by `emitEvent`), so that a trace shows the request, its statements and every attempt of its
 * webhooks, however long after and in whichever process they ran. `send` gets the `traceparent` header to send on:
 * the receiver continues the same trace (docs/webhooks.md, "Tracing"). With tracing off, `send` runs alone and no
 * header is added.
 */
export function tracedAttempt<R extends { ok: boolean; httpStatus: number; responseBody: string }>(
  endpoint: { id: string; url: string },
  delivery: { id: string; type: string; traceparent?: string | null },
  send: (traceHeaders: Record<string, string>) => Promise<R>,
): Promise<R> {
  return inSpan(`webhook ${delivery.type}`, {
    parent: delivery.traceparent,
    kind: SpanKind.PRODUCER,
    attributes: {
      "webhook.delivery_id": delivery.id,
      "webhook.event_type": delivery.type,
      "webhook.endpoint_id": endpoint.id,
      // the host only: a URL's path or query may hold the integrator's own token
      "server.address": hostOf(endpoint.url),
    },
  }, async (headers, span) => {
    const result = await send(headers);
    if (span) {
      if (result.httpStatus) span.setAttribute("http.response.status_code", result.httpStatus);
      // no answer: the sender's reason names no address (sendWebhook); an answer: its status is enough
      if (!result.ok) {
        span.setStatus({
          code: SpanStatusCode.ERROR,
          message: result.httpStatus ? `HTTP ${result.httpStatus}` : result.responseBody.slice(0, 200),
        });
      }
    }
    return result;
  });
}

function hostOf(url: string): string {
  try {
    return new URL(url).hostname;
  } catch {
    return "";
  }
}
