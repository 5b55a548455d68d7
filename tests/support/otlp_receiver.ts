/**
 * A local OTLP/HTTP receiver for the tracing stories: a collector's `/v1/traces` in the http/json encoding
 * (OTEL_EXPORTER_OTLP_PROTOCOL=http/json), recording every span it is sent. Metrics and logs the runtime exports
 * are accepted and dropped.
 */

/** A span as the tests read it: ids in hex, attribute values unwrapped from their OTLP `AnyValue`. */
export type ReceivedSpan = {
  service: string;
  scope: string;
  name: string;
  traceId: string;
  spanId: string;
  /** "" for a root span. */
  parentSpanId: string;
  /** OTLP SpanKind: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  /** OTLP status code: 0 unset, 1 ok, 2 error. */
  status: number;
  attributes: Record<string, unknown>;
};

export type OtlpReceiver = { endpoint: string; spans: ReceivedSpan[]; close: () => Promise<void> };

type AnyValue = Record<string, unknown>;
type KeyValue = { key: string; value: AnyValue };
type ExportRequest = {
  resourceSpans?: {
    resource?: { attributes?: KeyValue[] };
    scopeSpans?: {
      scope?: { name?: string };
      spans?: {
        name: string;
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        kind?: number;
        status?: { code?: number };
        attributes?: KeyValue[];
      }[];
    }[];
  }[];
};

/** The value of an OTLP `AnyValue` (`{"stringValue": "x"}` → "x"; int64 arrives as a string). */
function unwrap(value: AnyValue): unknown {
  const [kind, inner] = Object.entries(value)[0] ?? [];
  if (kind === "intValue") return Number(inner);
  return inner;
}

const attributesOf = (list: KeyValue[] = []) => Object.fromEntries(list.map((a) => [a.key, unwrap(a.value)]));

export function startOtlpReceiver(): OtlpReceiver {
  const spans: ReceivedSpan[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    const path = new URL(req.url).pathname;
    const text = await req.text();
    if (path === "/v1/traces") {
      const body = JSON.parse(text) as ExportRequest;
      for (const resourceSpans of body.resourceSpans ?? []) {
        const service = String(attributesOf(resourceSpans.resource?.attributes)["service.name"] ?? "");
        for (const scopeSpans of resourceSpans.scopeSpans ?? []) {
          for (const s of scopeSpans.spans ?? []) {
            spans.push({
              service,
              scope: scopeSpans.scope?.name ?? "",
              name: s.name,
              traceId: s.traceId,
              spanId: s.spanId,
              parentSpanId: s.parentSpanId ?? "",
              kind: s.kind ?? 0,
              status: s.status?.code ?? 0,
              attributes: attributesOf(s.attributes),
            });
          }
        }
      }
    }
    return Response.json({});
  });
  return {
    endpoint: `http://127.0.0.1:${server.addr.port}`,
    spans,
    close: () => server.shutdown(),
  };
}
