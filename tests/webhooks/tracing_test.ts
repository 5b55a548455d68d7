/**
 * Tracing with OTEL_DENO=true: a webhook continues the trace of the request that emitted its event; off by default;
 * the traceparent in the OpenAPI document, its W3C form and the settings' checks.
 */
import assert from "node:assert/strict";
import { setLogLevel } from "../../domain/basics/log.ts";
import { connect } from "../../domain/infra/db.ts";
import { dropDatabase, eventually, freshDatabase } from "../support/helpers.ts";
import { httpCompany, startService } from "../support/service_process.ts";
import { startReceiver } from "../support/webhook_receiver.ts";
import { createEndpointAt } from "../support/endpoints.ts";
import { type ReceivedSpan, startOtlpReceiver } from "../support/otlp_receiver.ts";
import { newCompany, setup } from "../support/helpers.ts";
import { loadConfig } from "../../domain/infra/config.ts";
import { currentTraceparent, inSpan, traceIdOf, tracingOn } from "../../domain/infra/tracing.ts";

const SERVER = 2;
const PRODUCER = 4;
const TRACEPARENT_RE = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/;
const hex = (bytes: number) =>
  Array.from(crypto.getRandomValues(new Uint8Array(bytes)), (b) => b.toString(16)).join("").padEnd(bytes * 2, "0");

Deno.test("with tracing on, a webhook continues the trace of the request that caused its event", async (t) => {
  setLogLevel("silent");
  const url = await freshDatabase("tracing");
  const otlp = startOtlpReceiver();
  const receiver = startReceiver();
  const service = await startService(url, {
    OTEL_DENO: "true",
    OTEL_EXPORTER_OTLP_ENDPOINT: otlp.endpoint,
    OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
    OTEL_SERVICE_NAME: "payments-api",
    // the receiver gets spans within a fraction of a second, not the runtime's default 5 s batches
    OTEL_BSP_SCHEDULE_DELAY: "100",
    OTEL_DENO_CONSOLE: "ignore",
  });
  const sql = connect(url, { max: 1 });
  const company = await httpCompany();
  const spansOf = (traceId: string) => otlp.spans.filter((s) => s.traceId === traceId);
  const statementsOf = (traceId: string) =>
    spansOf(traceId).filter((s) => s.attributes["db.system.name"] === "postgresql");
  try {
    const endpoint = await createEndpointAt(company, service.base, `${receiver.url}/traced`);

    // the integrator's own trace, which the request span continues: its trace id is known before the call
    const personTrace = hex(16);
    const document = "52998224725";
    let personId = "";
    await t.step("a request makes a span named after its route, and one span per statement it ran", async () => {
      const res = await fetch(`${service.base}/api/v1/subject/people`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${company.token}`,
          "content-type": "application/json",
          traceparent: `00-${personTrace}-${hex(8)}-01`,
        },
        body: JSON.stringify({
          person: { document_number: document, document_type: "cpf", social_name: "Ana Traced", fiscal_country: "BRA" },
        }),
      });
      assert.equal(res.status, 201);
      personId = (await res.json()).data.id;
      const request = await eventually(
        "the POST person span",
        () => spansOf(personTrace).find((s) => s.kind === SERVER && s.name === "POST /api/v1/subject/people"),
      );
      assert.equal(request.service, "payments-api");
      assert.equal(request.attributes["http.route"], "/api/v1/subject/people");
      const insert = await eventually(
        "the insert into people's span",
        () => statementsOf(personTrace).find((s) => /insert into people/i.test(String(s.attributes["db.query.text"]))),
      );
      assert.equal(insert.parentSpanId, request.spanId);
      assert.equal(insert.kind, 3);
      // statements are recorded as sent, with placeholders: the person's document and name appear in no span
      for (const span of spansOf(personTrace)) {
        const text = JSON.stringify(span);
        assert.ok(!text.includes(document) && !text.includes("Ana Traced"), `personal data in ${text}`);
      }
    });

    const approveTrace = hex(16);
    await t.step("the delivery carries a traceparent of the trace of the request that emitted the event", async () => {
      const res = await fetch(`${service.base}/api/sandbox/subjects/${personId}/approve`, {
        method: "POST",
        headers: { authorization: `Bearer ${company.token}`, traceparent: `00-${approveTrace}-${hex(8)}-01` },
      });
      assert.equal(res.status, 201, await res.text());
      const arrival = await eventually(
        "the subject_approved delivery",
        () => receiver.at("/traced").find((a) => a.body.type === "subject_approved"),
      );
      const [, traceId, parentId] = TRACEPARENT_RE.exec(arrival.headers.get("traceparent") ?? "") ?? [];
      assert.ok(traceId, `traceparent: ${arrival.headers.get("traceparent")}`);

      const request = await eventually(
        "the approve request's span",
        () =>
          spansOf(approveTrace).find((s) =>
            s.kind === SERVER && s.attributes["http.route"]?.toString().endsWith("/approve")
          ),
      );
      assert.equal(traceId, request.traceId);
      // stored with the event when it was emitted; the body's id is the delivery record's
      const [stored] = await sql<{ traceparent: string }[]>`
        select e.traceparent from events e join webhook_deliveries d on d.event_id = e.id
        where d.id = ${arrival.body.id} and d.company_id = ${company.id}`;
      assert.equal(stored.traceparent.slice(3, 35), approveTrace);

      // the attempt's span is a child of the request's; the POST it made, a child of the attempt, is what the
      // receiver's traceparent names as its parent
      const attempt = await eventually(
        "the attempt's span",
        () => spansOf(approveTrace).find((s) => s.kind === PRODUCER && s.name === "webhook subject_approved"),
      );
      assert.equal(attempt.parentSpanId, request.spanId);
      assert.equal(attempt.attributes["webhook.delivery_id"], arrival.headers.get("webhook-id"));
      assert.equal(attempt.attributes["webhook.endpoint_id"], endpoint.id);
      assert.equal(attempt.attributes["http.response.status_code"], 200);
      const posted = await eventually(
        "the span named by the receiver's traceparent",
        () => spansOf(approveTrace).find((s) => s.spanId === parentId),
      );
      assert.ok(posted.spanId === attempt.spanId || posted.parentSpanId === attempt.spanId, JSON.stringify(posted));

      const emitted = await eventually(
        "the statement that wrote the event",
        () => statementsOf(approveTrace).find((s) => /insert into events/i.test(String(s.attributes["db.query.text"]))),
      );
      assert.equal(emitted.parentSpanId, request.spanId);
    });

    await t.step("a failed attempt's span says so, in the same trace", async () => {
      // the test event, refused by a receiver that answers 410
      const gone = startReceiver(() => new Response("gone", { status: 410 }));
      try {
        const target = await createEndpointAt(company, service.base, `${gone.url}/gone`);
        const testTrace = hex(16);
        const res = await fetch(`${service.base}/api/v2/notifications/endpoints/${target.id}/test`, {
          method: "POST",
          headers: {
            authorization: `Bearer ${company.token}`,
            "content-type": "application/json",
            traceparent: `00-${testTrace}-${hex(8)}-01`,
          },
          body: "{}",
        });
        assert.equal(res.status, 202, await res.text());
        const attempt: ReceivedSpan = await eventually(
          "the refused attempt's span",
          () => spansOf(testTrace).find((s) => s.kind === PRODUCER),
        );
        assert.equal(attempt.status, 2);
        assert.equal(attempt.attributes["http.response.status_code"], 410);
      } finally {
        await gone.close();
      }
    });
  } finally {
    await service.stop();
    await sql.end();
    await receiver.close();
    await otlp.close();
    await dropDatabase(url);
  }
});

Deno.test("tracing is off by default: no span, no traceparent stored or sent", async () => {
  // this test process runs without OTEL_DENO, as the service does by default
  assert.equal(loadConfig({ JWT_SECRET: "x".repeat(40) }).tracing.enabled, false);
  assert.equal(tracingOn(), false);
  assert.equal(currentTraceparent(), null);
  assert.deepEqual(
    await inSpan("work", { parent: `00-${"a".repeat(32)}-${"b".repeat(16)}-01` }, (h, span) => {
      assert.equal(span, null);
      return Promise.resolve(h);
    }),
    {},
  );

  const ctx = await setup("tracing_off", { worker: true });
  const receiver = startReceiver();
  try {
    const company = await newCompany(ctx);
    const endpoint = await company.post("/api/v2/notifications/endpoints", { url: `${receiver.url}/off` });
    assert.equal(endpoint.status, 201);
    const sent = await company.call("POST", `/api/v2/notifications/endpoints/${endpoint.body.data.id}/test`, {}, {
      traceparent: `00-${"c".repeat(32)}-${"d".repeat(16)}-01`,
    });
    assert.equal(sent.status, 202);
    const arrival = await eventually("the test event", () => receiver.at("/off")[0]);
    assert.equal(arrival.headers.get("traceparent"), null);
    const [event] = await ctx.sql<{ traceparent: string | null }[]>`
      select traceparent from events where company_id = ${company.id}`;
    assert.equal(event.traceparent, null);
  } finally {
    await receiver.close();
    await ctx.close();
  }
});

Deno.test("the OpenAPI document names traceparent among the headers of every webhook, optional", async () => {
  const ctx = await setup("tracing_openapi");
  try {
    const document = await (await ctx.app.request("/openapi.json")).json();
    const webhooks = Object.entries(document.webhooks as Record<string, { post: { parameters: unknown[] } }>);
    assert.ok(webhooks.length > 0);
    for (const [type, { post }] of webhooks) {
      const header = post.parameters.find((p) => (p as { name: string }).name === "traceparent") as
        | { in: string; required?: boolean }
        | undefined;
      assert.equal(header?.in, "header", type);
      assert.notEqual(header?.required, true, type);
    }
  } finally {
    await ctx.close();
  }
});

Deno.test("a traceparent is read only in the W3C form, with ids that are not all zeros", () => {
  const trace = "0af7651916cd43dd8448eb211c80319c";
  assert.equal(traceIdOf(`00-${trace}-b7ad6b7169203331-01`), trace);
  assert.equal(traceIdOf(`00-${trace}-b7ad6b7169203331-00`), trace);
  for (
    const bad of [
      null,
      undefined,
      "",
      `00-${"0".repeat(32)}-b7ad6b7169203331-01`,
      `00-${trace}-${"0".repeat(16)}-01`,
      `01-${trace}-b7ad6b7169203331-01`,
      `00-${trace.toUpperCase()}-b7ad6b7169203331-01`,
      `00-${trace}-b7ad6b7169203331-01-extra`,
    ]
  ) assert.equal(traceIdOf(bad), null, String(bad));
});

Deno.test("tracing's settings are checked at start, naming the variable", () => {
  const base = { JWT_SECRET: "x".repeat(40) };
  const on = loadConfig({
    ...base,
    OTEL_DENO: "TRUE",
    OTEL_EXPORTER_OTLP_ENDPOINT: "https://otel.example.com:4318",
    OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
    OTEL_SERVICE_NAME: "payments-api",
  }).tracing;
  assert.deepEqual(on, {
    enabled: true,
    endpoint: "https://otel.example.com:4318",
    protocol: "http/json",
    serviceName: "payments-api",
  });
  assert.equal(loadConfig({ ...base, OTEL_DENO: "false" }).tracing.enabled, false);
  const refused: [Record<string, string>, RegExp][] = [
    // the runtime ignores "1" and "on" with a warning: tracing would silently stay off
    [{ OTEL_DENO: "1" }, /OTEL_DENO: must be true or false/],
    [{ OTEL_DENO: "on" }, /OTEL_DENO: must be true or false/],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: "otel:4318" }, /OTEL_EXPORTER_OTLP_ENDPOINT: must be an http/],
    [{ OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" }, /OTEL_EXPORTER_OTLP_PROTOCOL/],
  ];
  for (const [env, message] of refused) assert.throws(() => loadConfig({ ...base, ...env }), message);
});
