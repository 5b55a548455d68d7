/**
 * What an integrator who generates a client does: types from the live document (openapi-typescript), a flow
 * written against them with openapi-fetch and no casts, `deno check` on it, then the flow run against the app.
 */
import assert from "node:assert/strict";
import openapiTS, { astToString } from "openapi-typescript";
import { newCompany, setup } from "../support/helpers.ts";

const CONFIG = new URL("../../deno.json", import.meta.url).pathname;

/**
 * The integrator's code. Each `@ts-expect-error` is a mistake the generated types must refuse: `deno check` fails
 * when the line compiles, so the enums and the integer `per_page` of the document are checked too.
 */
const FLOW = `import createClient from "openapi-fetch";
import type { paths } from "./schema.d.ts";

export async function integratorFlow(fetch: (request: Request) => Promise<Response>, token: string) {
  const client = createClient<paths>({
    baseUrl: "http://api.test",
    fetch,
    headers: { authorization: \`Bearer \${token}\` },
  });

  const person = await client.POST("/api/v1/subject/people", {
    body: {
      person: { document_number: "52998224725", document_type: "cpf", social_name: "Ana Souza", fiscal_country: "BRA" },
    },
  });
  if (!person.data) throw new Error(\`person: \${person.response.status}\`);
  const subjectId: string = person.data.data.id;
  const status: "approved" | "reproved" | "waiting_approval" = person.data.data.status;

  const account = await client.POST("/api/v1/subject/{id}/bank_accounts", {
    params: { path: { id: subjectId } },
    body: {
      bank_account: {
        currency: "BRL",
        owner_name: "Ana Souza",
        account_number: "123456",
        branch_number: "0001",
        account_type: "conta-corrente",
        bank: { code: "341", ispb: "60701190", name: "Itaú Unibanco S.A." },
        pix_info: null,
      },
    },
  });
  if (!account.data) throw new Error(\`account: \${JSON.stringify(account.error)}\`);

  const endpoint = await client.POST("/api/v2/notifications/endpoints", {
    body: { url: "https://example.com/webhooks", enabled_events: ["identified"], event_mapping: null },
  });
  if (!endpoint.data) throw new Error(\`endpoint: \${endpoint.response.status}\`);
  const renamed = await client.PUT("/api/v2/notifications/endpoints/{id}", {
    params: { path: { id: endpoint.data.data.id } },
    body: { event_mapping: { identified: "paid" }, max_concurrency: null },
  });
  if (!renamed.data) throw new Error(\`rename: \${renamed.response.status}\`);
  const asymmetric = await client.POST("/api/v2/notifications/endpoints", {
    // a type the flow below does not emit, so that the events listed are the first endpoint's
    body: { url: "https://example.com/ed25519", signature_scheme: "ed25519", enabled_events: ["wire_created"] },
  });
  if (!asymmetric.data) throw new Error(\`ed25519 endpoint: \${asymmetric.response.status}\`);
  const pinned = await client.POST("/api/v2/notifications/endpoints", {
    body: { url: "https://example.com/pinned", payload_version: "2026-11-27", enabled_events: ["wire_created"] },
  });
  if (!pinned.data) throw new Error(\`pinned endpoint: \${pinned.response.status}\`);
  const catalogue = await client.GET("/api/v2/notifications/event_types");
  if (!catalogue.data) throw new Error(\`catalogue: \${catalogue.response.status}\`);
  const versions: string[] = catalogue.data.versions.map((v) => v.version);
  const publicKey: string | null = asymmetric.data.data.public_key;
  const throttled = await client.POST("/api/v2/notifications/endpoints", {
    body: { url: "https://example.com/throttled", rate_limit: 0.5, enabled_events: ["wire_created"] },
  });
  if (!throttled.data) throw new Error(\`throttled endpoint: \${throttled.response.status}\`);
  const rateLimit: number | null = throttled.data.data.rate_limit;
  const withHeaders = await client.POST("/api/v2/notifications/endpoints", {
    body: {
      url: "https://example.com/headers",
      enabled_events: ["wire_created"],
      headers: { "X-Tenant": "acme" },
      secret_headers: { "X-Api-Key": "k_live_0123456789abcdef" },
    },
  });
  if (!withHeaders.data) throw new Error(\`custom headers: \${withHeaders.response.status}\`);
  const plainHeaders: Record<string, string> = withHeaders.data.data.headers;
  const maskedHeaders: Record<string, string> = withHeaders.data.data.secret_headers;

  const payin = await client.POST("/api/sandbox/payins", {
    body: { subject_id: subjectId, value: "100.00", currency: "BRL" },
  });
  if (!payin.data) throw new Error(\`payin: \${payin.response.status}\`);

  // OAuth2 client credentials: the secret goes in, and never comes back out
  const guarded = await client.POST("/api/v2/notifications/endpoints", {
    body: {
      url: "https://example.com/oauth2",
      enabled_events: ["wire_created"],
      oauth2: { token_url: "https://auth.example.com/token", client_id: "payments", client_secret: "oauth2-secret" },
    },
  });
  if (!guarded.data) throw new Error(\`oauth2 endpoint: \${guarded.response.status}\`);
  const oauth2Client: string | undefined = guarded.data.data.oauth2?.client_id;

  // a destination (docs/webhooks.md, "Destinations"): the events go to a RabbitMQ exchange instead of a URL
  const broker = await client.POST("/api/v2/notifications/endpoints", {
    body: {
      url: "amqp://127.0.0.1:5672/%2F",
      destination: { exchange: "payments", routing_key: "pay.{type}" },
      broker_credentials: { username: "guest", password: "guest" },
      enabled_events: ["identified"],
    },
  });
  if (!broker.data) throw new Error(\`broker endpoint: \${JSON.stringify(broker.error)}\`);
  const transport: "http" | "amqp" | "nats" | "redis" | "mqtt" = broker.data.data.transport;

  // a pull stream (docs/webhooks.md, "Pull streams"): read with a cursor, acknowledged
  const stream = await client.POST("/api/v2/notifications/streams", {
    body: { enabled_events: ["identified"], description: "ledger" },
  });
  if (!stream.data) throw new Error(\`stream: \${stream.response.status}\`);
  const page = await client.GET("/api/v2/notifications/streams/{id}/messages", {
    params: { path: { id: stream.data.data.id }, query: { limit: 10, wait: 0 } },
  });
  if (!page.data) throw new Error(\`messages: \${page.response.status}\`);
  const acked = await client.POST("/api/v2/notifications/streams/{id}/ack", {
    params: { path: { id: stream.data.data.id } },
    body: { cursor: page.data.next_cursor },
  });
  if (!acked.data) throw new Error(\`ack: \${acked.response.status}\`);
  const streamSecret: string = stream.data.data.secret;

  // batches (docs/webhooks.md, "Batches"): up to 10 events a request
  const batched = await client.POST("/api/v2/notifications/endpoints", {
    body: { url: "https://example.com/batched", batch: { max_events: 10, max_wait_ms: 500 } },
  });
  if (!batched.data) throw new Error(\`batched endpoint: \${JSON.stringify(batched.error)}\`);
  const batchSize: number | undefined = batched.data.data.batch?.max_events;

  const events = await client.GET("/api/v2/notifications/events", {
    params: { query: { per_page: 5, order_by: "asc", status: "pending" } },
  });
  if (!events.data) throw new Error(\`events: \${events.response.status}\`);

  const recovered = await client.POST("/api/v2/notifications/endpoints/{id}/recover", {
    params: { path: { id: endpoint.data.data.id } },
    body: { since: "2026-01-01T00:00:00Z", include_skipped: true },
  });
  if (!recovered.data) throw new Error(\`recover: \${recovered.response.status}\`);
  const skippedRemaining: boolean = recovered.data.data.skipped_remaining;

  const stats = await client.GET("/api/v2/notifications/endpoints/{id}/stats", {
    params: { path: { id: endpoint.data.data.id }, query: { since: "2026-01-01T00:00:00Z" } },
  });
  if (!stats.data) throw new Error(\`stats: \${stats.response.status}\`);
  const successRate: number | null = stats.data.data.success_rate;
  const lastFailure: string | null | undefined = stats.data.data.last_failure?.reason;
  const throttledUntil: string | null = stats.data.data.throttle.throttled_until;

  // mTLS (docs/webhooks.md, "Client certificates (mTLS)"): null removes the client certificate; what is shown of one
  const withoutCertificate = await client.PUT("/api/v2/notifications/endpoints/{id}", {
    params: { path: { id: endpoint.data.data.id } },
    body: { client_certificate: null },
  });
  if (!withoutCertificate.data) throw new Error(\`client certificate: \${withoutCertificate.response.status}\`);
  const certificateExpiry: string | undefined = withoutCertificate.data.data.client_certificate?.expires_at;

  const refused = await client.POST("/api/v1/subject/people", {
    body: { person: { document_number: "123", document_type: "cpf", social_name: "Ana", fiscal_country: "BRA" } },
  });
  const errors: Record<string, unknown> | undefined = refused.error?.errors;

  return {
    subjectId,
    status,
    accountCurrency: account.data.data.currency,
    secretLength: endpoint.data.data.secret?.length,
    asymmetric: { secret: asymmetric.data.data.secret, publicKey, scheme: asymmetric.data.data.signature_scheme },
    mapping: renamed.data.data.event_mapping,
    customHeaders: { plain: plainHeaders, masked: maskedHeaders },
    payloadVersions: { pinned: pinned.data.data.payload_version, unpinned: endpoint.data.data.payload_version, versions },
    payinValue: payin.data.data.value,
    events: events.data.data.map((e) => ({ type: e.type, endpoint: e.endpoint_id, status: e.status })),
    endpointId: endpoint.data.data.id,
    requestId: events.response.headers.get("x-request-id"),
    oauth2: { clientId: oauth2Client, secretShown: JSON.stringify(guarded.data).includes("oauth2-secret") },
    broker: { transport, destination: broker.data.data.destination, credentials: broker.data.data.broker_credentials },
    batchSize,
    stream: {
      secretLength: streamSecret.length,
      messages: page.data.data.map((m) => m.type),
      hasMore: page.data.has_more,
      committed: acked.data.data.cursor === page.data.next_cursor,
    },
    refused: { status: refused.response.status, errors },
    certificateExpiry,
    recovered: { failed: recovered.data.data.failed, skipped: recovered.data.data.skipped, skippedRemaining },
    stats: {
      total: stats.data.data.attempts.total,
      http5xx: stats.data.data.attempts.http_5xx,
      successRate,
      lastFailure,
    },
    throttle: { rateLimit, throttledUntil, pending: stats.data.data.throttle.pending },
  };
}

export function mistakes(client: ReturnType<typeof createClient<paths>>) {
  return [
    client.POST("/api/v1/subject/people", {
      // @ts-expect-error document_type is one of the document types
      body: { person: { document_number: "1", document_type: "string", social_name: "A", fiscal_country: "BRA" } },
    }),
    // @ts-expect-error per_page is an integer
    client.GET("/api/v2/notifications/events", { params: { query: { per_page: "5" } } }),
    // @ts-expect-error a currency the sandbox does not know
    client.POST("/api/sandbox/payins", { body: { subject_id: "x", value: "1", currency: "XYZ" } }),
    // @ts-expect-error an event type that does not exist
    client.POST("/api/v2/notifications/endpoints", { body: { url: "https://a.test", enabled_events: ["paid"] } }),
    client.POST("/api/v2/notifications/endpoints", {
      // @ts-expect-error client_auth is client_secret_basic or client_secret_post
      body: { url: "https://a.test", oauth2: { token_url: "https://a.test/t", client_id: "c", client_auth: "jwt" } },
    }),
    // @ts-expect-error rate_limit is a number of deliveries per second
    client.POST("/api/v2/notifications/endpoints", { body: { url: "https://a.test", rate_limit: "5" } }),
    // @ts-expect-error a signature scheme that does not exist
    client.POST("/api/v2/notifications/endpoints", { body: { url: "https://a.test", signature_scheme: "rsa" } }),
    // @ts-expect-error a header value is a string
    client.POST("/api/v2/notifications/endpoints", { body: { url: "https://a.test", headers: { "X-Count": 1 } } }),
    // @ts-expect-error a payload version that does not exist
    client.POST("/api/v2/notifications/endpoints", { body: { url: "https://a.test", payload_version: "2026-11-01" } }),
    client.POST("/api/v2/notifications/endpoints/{id}/recover", {
      params: { path: { id: "x" } },
      // @ts-expect-error include_skipped is a boolean
      body: { since: "2026-01-01", include_skipped: "yes" },
    }),
    client.PUT("/api/v2/notifications/endpoints/{id}", {
      params: { path: { id: "x" } },
      // @ts-expect-error a client certificate comes with its private key
      body: { client_certificate: { certificate: "-----BEGIN CERTIFICATE-----" } },
    }),
    client.GET("/api/v2/notifications/endpoints/{id}/stats", {
      // @ts-expect-error since is an instant in a string, not a number
      params: { path: { id: "x" }, query: { since: 1767225600 } },
    }),
  ];
}
`;

Deno.test("a client generated from the document compiles an integrator flow and runs it", async (t) => {
  const ctx = await setup("openapi_client");
  const dir = await Deno.makeTempDir({ prefix: "openapi_client_" });
  try {
    await t.step("types generated from the live document and the flow type-check without casts", async () => {
      const doc = await (await ctx.app.request("/openapi.json")).json();
      await Deno.writeTextFile(`${dir}/schema.d.ts`, astToString(await openapiTS(doc)));
      await Deno.writeTextFile(`${dir}/flow.ts`, FLOW);
      assert.doesNotMatch(FLOW, / as [A-Za-z{]/, "no casts in the integrator's code");
      const check = await new Deno.Command(Deno.execPath(), {
        args: ["check", "--quiet", "--config", CONFIG, `${dir}/flow.ts`],
        stdout: "piped",
        stderr: "piped",
      }).output();
      const output = new TextDecoder().decode(check.stderr) + new TextDecoder().decode(check.stdout);
      assert.equal(check.code, 0, output);
    });

    await t.step("the flow runs against the app and every answer is what its type says", async () => {
      const company = await newCompany(ctx);
      const { integratorFlow } = await import(`file://${dir}/flow.ts`);
      const result = await integratorFlow((request: Request) => ctx.app.request(request), company.token);
      assert.equal(result.status, "approved");
      assert.equal(result.accountCurrency, "BRL");
      assert.equal(result.secretLength, 64);
      assert.equal(result.asymmetric.secret, null);
      assert.equal(result.asymmetric.scheme, "ed25519");
      assert.match(result.asymmetric.publicKey, /^whpk_[A-Za-z0-9+/]{43}=$/);
      assert.deepEqual(result.mapping, { identified: "paid" });
      assert.deepEqual(result.customHeaders, { plain: { "X-Tenant": "acme" }, masked: { "X-Api-Key": "****cdef" } });
      assert.deepEqual(result.payloadVersions, {
        pinned: "2026-11-27",
        unpinned: "2026-11-23",
        versions: ["2026-11-23", "2026-11-27"],
      });
      assert.equal(result.payinValue, "100.00");
      assert.deepEqual(result.events, [{ type: "identified", endpoint: result.endpointId, status: "pending" }]);
      assert.match(result.requestId ?? "", /^[0-9a-f-]{36}$/);
      assert.deepEqual(result.oauth2, { clientId: "payments", secretShown: false });
      assert.deepEqual(result.broker, {
        transport: "amqp",
        destination: { exchange: "payments", routing_key: "pay.{type}" },
        credentials: { username: "guest", password: "****" },
      });
      // the payin of the flow came before the stream was made: a stream starts with what follows it
      assert.equal(result.batchSize, 10);
      assert.deepEqual(result.stream, { secretLength: 64, messages: [], hasMore: false, committed: true });
      assert.equal(result.refused.status, 422);
      assert.deepEqual(result.refused.errors, { document_number: ["must have 11 digits"] });
      assert.equal(result.certificateExpiry, undefined, "no client certificate");
      // never disabled: nothing failed, nothing skipped
      assert.deepEqual(result.recovered, { failed: 0, skipped: 0, skippedRemaining: false });
      // no worker runs here: nothing was attempted yet
      assert.deepEqual(result.stats, { total: 0, http5xx: 0, successRate: null, lastFailure: undefined });
      // the first endpoint has no rate_limit; its one event waits for a worker, not for a throttle
      assert.deepEqual(result.throttle, { rateLimit: 0.5, throttledUntil: null, pending: 1 });
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
    await ctx.close();
  }
});
