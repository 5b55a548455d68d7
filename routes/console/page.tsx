/**
 * The console's one page, rendered here; `assets/console.js` signs in, calls the public API with the token it keeps
 * for the tab (never in a URL, never in localStorage), fills the tables and shows one view at a time: the overview,
 * the delivery log, one endpoint's page, the catalogue (README, Integrator console). Every look is in
 * `assets/console.css`: the page carries classes, never a style attribute, which the policy would refuse.
 */

import type { FC } from "hono/jsx";
import { CATALOGUE } from "../../domain/webhooks/outbox/catalogue.ts";
import { EVENT_TYPES } from "../../domain/webhooks/outbox/events.ts";
import { PAYLOAD_VERSIONS } from "../../domain/webhooks/outbox/payload_versions.ts";

/** A labelled field; `live`: its hint is rewritten by the script, and a screen reader reads it out when it is. */
const Field: FC<{ id: string; label: string; hint?: string; wide?: boolean; live?: boolean; children: unknown }> = (
  { id, label, hint, wide, live, children },
) => (
  <p class={wide ? "field wide" : "field"}>
    <label for={id}>{label}</label>
    {children}
    {hint && <small id={`${id}-hint`} class="hint" aria-live={live ? "polite" : undefined}>{hint}</small>}
  </p>
);

/**
 * A table the script fills: its caption, its column headers, the id of its body, and what to say when it is empty
 * (outside the body, so that a count of its rows is a count of records). `extra` columns are shown only once a record
 * carries the fields they read (the script marks the table).
 */
const Table: FC<{ caption: string; columns: string[]; body: string; empty: string; extra?: string[] }> = (
  { caption, columns, body, empty, extra = [] },
) => (
  <>
    <table class="stack" id={`${body}-table`} data-extra={extra.length ? "absent" : undefined}>
      <caption>{caption}</caption>
      <thead>
        <tr>
          {columns.map((c) => <th key={c} scope="col">{c}</th>)}
          {extra.map((c) => <th key={c} scope="col" class="extra">{c}</th>)}
        </tr>
      </thead>
      <tbody id={body}></tbody>
    </table>
    <p id={`${body}-empty`} class="empty" hidden>{empty}</p>
  </>
);

/**
 * The endpoint's event types, chosen from the catalogue rather than typed: `*` (every type, and those added later) or
 * the types ticked. The script keeps the two apart: ticking a type unticks `*`, and ticking `*` unticks the types.
 */
const EventTypeChoice = () => (
  <fieldset id="endpoint-events-choice" class="field wide choice">
    <legend>Event types</legend>
    <label class="check">
      <input type="checkbox" id="endpoint-events" value="*" checked /> All, and any added later (<code>*</code>)
    </label>
    <ul class="choices">
      {CATALOGUE.map((entry) => (
        <li key={entry.type}>
          <label class="check">
            <input type="checkbox" class="event-type" value={entry.type} /> <code>{entry.type}</code>
          </label>
        </li>
      ))}
    </ul>
  </fieldset>
);

/**
 * What a portal link's page wears instead of the console's own words (docs/webhooks.md, "Portal links"): the
 * platform's name, its logo and support address, and in place of each setting name in the catalogue's descriptions
 * what that setting is, in a customer's words (`words`).
 */
export type PortalLook = {
  linkId: string;
  name: string | null;
  /** Whether the link has an accent colour: its stylesheet is then served beside the page. */
  accent: boolean;
  supportUrl: string | null;
  logo: boolean;
  words: Record<string, string>;
};

/** A setting's name as the catalogue writes one: capitals with an underscore (`WEBHOOK_FAILING_AFTER_ATTEMPTS`). */
const SETTING_NAME = /\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b/g;

/**
 * A catalogue description as formatted text: its `code` spans as <code> (JSX escapes every part: no markup of the
 * text is ever read as HTML); in a portal, each setting's name as what it is, from `words`, or in general terms for a
 * name `words` does not know.
 */
const Description: FC<{ text: string; words?: Record<string, string> }> = ({ text, words }) => (
  <>
    {text.split(/(`[^`]+`)/).map((part, i) =>
      /^`[^`]+`$/.test(part)
        ? <code key={i}>{part.slice(1, -1)}</code>
        : words
        ? part.replace(SETTING_NAME, (name) => words[name] ?? "a bound this service sets")
        : part
    )}
  </>
);

/** What the URL field's hint says until its scheme names a broker (the script then says which). */
const URL_HINT = "https:// for an HTTP receiver; amqps://, tls:// (NATS), rediss:// or mqtts:// for a message broker";

/**
 * A broker endpoint's own fields (docs/webhooks.md, "Destinations"): where on the broker it publishes, one group per
 * transport, and the broker's credentials. The script shows the group of the transport the URL's scheme names and
 * keeps the others disabled, so that a hidden group is neither checked by the browser nor sent.
 */
const BrokerFields = () => (
  <div id="endpoint-broker" class="contents" hidden>
    <fieldset id="endpoint-destination-amqp" class="field wide choice" data-transport="amqp" hidden disabled>
      <legend>RabbitMQ destination</legend>
      <div class="fields">
        <Field id="endpoint-exchange" label="Exchange" hint="Empty: the default exchange">
          <input
            id="endpoint-exchange"
            name="exchange"
            autocomplete="off"
            placeholder="payments"
            aria-describedby="endpoint-exchange-hint"
          />
        </Field>
        <Field id="endpoint-routing-key" label="Routing key" hint="{type} is the event type; empty: {type}">
          <input
            id="endpoint-routing-key"
            name="routing_key"
            autocomplete="off"
            placeholder="pay.{type}"
            aria-describedby="endpoint-routing-key-hint"
          />
        </Field>
      </div>
    </fieldset>
    <fieldset id="endpoint-destination-nats" class="field wide choice" data-transport="nats" hidden disabled>
      <legend>NATS JetStream destination</legend>
      <div class="fields">
        <Field id="endpoint-subject" label="Subject" hint="A stream must take it; {type} is the event type" wide>
          <input
            id="endpoint-subject"
            name="subject"
            autocomplete="off"
            required
            placeholder="payments.{type}"
            aria-describedby="endpoint-subject-hint"
          />
        </Field>
      </div>
    </fieldset>
    <fieldset id="endpoint-destination-redis" class="field wide choice" data-transport="redis" hidden disabled>
      <legend>Redis Streams destination</legend>
      <div class="fields">
        <Field id="endpoint-stream" label="Stream" hint="The stream's key; {type} is the event type">
          <input
            id="endpoint-stream"
            name="stream"
            autocomplete="off"
            required
            placeholder="payments"
            aria-describedby="endpoint-stream-hint"
          />
        </Field>
        <Field id="endpoint-maxlen" label="Max length" hint="Trimmed to about this many entries; empty: never">
          <input
            id="endpoint-maxlen"
            name="maxlen"
            type="number"
            min="1"
            max="10000000"
            step="1"
            placeholder="none"
            aria-describedby="endpoint-maxlen-hint"
          />
        </Field>
      </div>
    </fieldset>
    <fieldset id="endpoint-destination-mqtt" class="field wide choice" data-transport="mqtt" hidden disabled>
      <legend>MQTT destination</legend>
      <div class="fields">
        <Field id="endpoint-topic" label="Topic" hint="Published with QoS 1; {type} is the event type" wide>
          <input
            id="endpoint-topic"
            name="topic"
            autocomplete="off"
            required
            placeholder="payments/{type}"
            aria-describedby="endpoint-topic-hint"
          />
        </Field>
      </div>
    </fieldset>
    {/* stored sealed and shown masked (docs/webhooks.md, Destinations): the password is written, never read back */}
    <fieldset id="endpoint-credentials" class="field wide choice" disabled>
      <legend>Broker credentials</legend>
      <div class="fields">
        <Field id="endpoint-broker-username" label="Username">
          <input id="endpoint-broker-username" name="broker_username" autocomplete="off" />
        </Field>
        <Field
          id="endpoint-broker-password"
          label="Password"
          hint="Stored sealed, shown masked; empty on a save keeps the stored one"
        >
          <input
            id="endpoint-broker-password"
            name="broker_password"
            type="password"
            autocomplete="new-password"
            aria-describedby="endpoint-broker-password-hint"
          />
        </Field>
        <div id="endpoint-token-field" class="contents" hidden>
          <Field id="endpoint-broker-token" label="Token" hint="Instead of a username and password; stored sealed">
            <input
              id="endpoint-broker-token"
              name="broker_token"
              type="password"
              autocomplete="off"
              aria-describedby="endpoint-broker-token-hint"
            />
          </Field>
        </div>
        <Field id="endpoint-broker-remove" label="Remove the credentials">
          <input id="endpoint-broker-remove" name="broker_remove" type="checkbox" />
        </Field>
      </div>
    </fieldset>
  </div>
);

const SignIn = () => (
  <section id="sign-in" class="card narrow" aria-labelledby="sign-in-title">
    <h2 id="sign-in-title">Sign in</h2>
    <p class="lead">The people of an integrator manage their webhook endpoints and read their deliveries here.</p>
    <form id="sign-in-form">
      <Field id="username" label="Username">
        <input id="username" name="username" autocomplete="username" required />
      </Field>
      <Field id="password" label="Password">
        <input id="password" name="password" type="password" autocomplete="current-password" required />
      </Field>
      <button type="submit" class="primary">Sign in</button>
      <p id="sign-in-error" class="error" role="alert"></p>
    </form>
  </section>
);

/**
 * What needs doing first: counts up front, then one line per endpoint that has failed deliveries, deliveries being
 * retried after a failed attempt, or is disabled.
 */
const Attention = () => (
  <section id="attention" class="card" aria-labelledby="attention-title">
    <div class="heading">
      <h2 id="attention-title">Needs attention</h2>
      <button type="button" id="refresh">Refresh</button>
    </div>
    <dl class="stats">
      <div class="stat" data-tone="failed">
        <dt>Failed deliveries</dt>
        <dd id="stat-failed">–</dd>
      </div>
      <div class="stat" data-tone="pending">
        <dt>Pending</dt>
        <dd id="stat-pending">–</dd>
      </div>
      <div class="stat" data-tone="disabled">
        <dt>Disabled endpoints</dt>
        <dd id="stat-disabled">–</dd>
      </div>
      <div class="stat" data-tone="succeeded">
        <dt>Delivered (24 h)</dt>
        <dd id="stat-delivered">–</dd>
      </div>
    </dl>
    <ul id="attention-list" class="attention"></ul>
    <p id="attention-empty" class="empty ok" hidden>
      Nothing needs attention: every endpoint is active, no delivery has failed and none is being retried.
    </p>
  </section>
);

const Endpoints = () => (
  <section id="endpoints" class="card" aria-labelledby="endpoints-title">
    <h2 id="endpoints-title">Endpoints</h2>
    <Table
      caption="Your endpoints"
      columns={["URL", "Settings", "Status", "Deliveries", "Last 24 h", "Actions"]}
      body="endpoint-rows"
      empty="No endpoint yet. Add the URL where your server receives webhooks below, then send it a test event to check that it answers 2xx."
    />
    <div id="endpoint-secret-home">
      <p id="endpoint-secret" class="secret" role="status" hidden></p>
    </div>
    {/* the forms fold away, so the overview is the list first; open when there is no endpoint yet, or one is edited */}
    <details id="endpoint-form-panel" class="panel">
      <summary>
        <h3 id="endpoint-form-title">Add an endpoint</h3>
      </summary>
      <form id="endpoint-form">
        <input type="hidden" id="endpoint-id" name="id" />
        <div class="fields">
          {/* the scheme picks the transport: a broker's shows its fields below and hides the HTTP-only ones */}
          <Field id="endpoint-url" label="URL" hint={URL_HINT} wide live>
            <input
              id="endpoint-url"
              name="url"
              type="url"
              required
              placeholder="https://example.com/webhooks"
              aria-describedby="endpoint-url-hint"
            />
          </Field>
          <BrokerFields />
          <Field id="endpoint-mode" label="Delivery mode">
            <select id="endpoint-mode" name="delivery_mode">
              <option value="parallel">parallel</option>
              <option value="sequential">sequential</option>
            </select>
          </Field>
          <Field id="endpoint-scheme" label="Signatures">
            <select id="endpoint-scheme" name="signature_scheme">
              <option value="hmac-sha256">hmac-sha256 (shared secret)</option>
              <option value="ed25519">ed25519 (public key)</option>
            </select>
          </Field>
          <EventTypeChoice />
          <Field id="endpoint-filter" label="Filter (CEL)" hint="Only events for which it is true; empty for all" wide>
            <input
              id="endpoint-filter"
              name="filter"
              placeholder="has(data.bank_transaction) && double(data.bank_transaction.value) > 1000.0"
              aria-describedby="endpoint-filter-hint"
            />
          </Field>
          <Field
            id="endpoint-rate"
            label="Rate limit (per second)"
            hint="Deliveries per second at most; empty for none"
          >
            <input
              id="endpoint-rate"
              name="rate_limit"
              type="number"
              min="0.01"
              max="1000"
              step="any"
              placeholder="none"
              aria-describedby="endpoint-rate-hint"
            />
          </Field>
          {/* custom headers (docs/webhooks.md, Custom headers): one "Name: value" a line */}
          <Field id="endpoint-headers" label="Headers" hint="One Name: value a line, sent with every attempt" wide>
            <textarea
              id="endpoint-headers"
              name="headers"
              rows={2}
              placeholder="X-Tenant: acme"
              aria-describedby="endpoint-headers-hint"
            />
          </Field>
          <Field
            id="endpoint-secret-headers"
            label="Secret headers"
            hint="Stored sealed and shown masked: leave a masked value as it is to keep it, unless the URL moves to another origin"
            wide
          >
            <textarea
              id="endpoint-secret-headers"
              name="secret_headers"
              rows={2}
              placeholder="X-Api-Key: your key"
              aria-describedby="endpoint-secret-headers-hint"
            />
          </Field>
          {/* what only an HTTP receiver has: hidden while the URL names a broker */}
          <div id="endpoint-http-only" class="contents">
            {/* mTLS (docs/webhooks.md, "Client certificates (mTLS)"): the key is sent, never shown back */}
            <Field
              id="endpoint-client-cert"
              label="Client certificate (mTLS)"
              hint="PEM, for receivers that require one; empty keeps the current one, unless the URL moves to another origin"
              wide
            >
              <textarea
                id="endpoint-client-cert"
                name="client_certificate"
                rows={3}
                placeholder="-----BEGIN CERTIFICATE-----"
                aria-describedby="endpoint-client-cert-hint"
              />
            </Field>
            <Field id="endpoint-client-key" label="Its private key" hint="PEM, unencrypted; stored sealed" wide>
              <textarea
                id="endpoint-client-key"
                name="client_key"
                rows={3}
                placeholder="-----BEGIN PRIVATE KEY-----"
                aria-describedby="endpoint-client-key-hint"
              />
            </Field>
            <Field id="endpoint-client-remove" label="Remove the client certificate">
              <input id="endpoint-client-remove" name="client_remove" type="checkbox" />
            </Field>
            {/* OAuth2 client credentials (docs/webhooks.md): the secret is written here, never shown back */}
            <Field id="endpoint-oauth2-url" label="OAuth2 token URL" hint="Empty: no bearer token" wide>
              <input
                id="endpoint-oauth2-url"
                name="oauth2_token_url"
                type="url"
                placeholder="https://auth.example.com/oauth2/token"
                aria-describedby="endpoint-oauth2-url-hint"
              />
            </Field>
            <Field id="endpoint-oauth2-client" label="OAuth2 client id">
              <input id="endpoint-oauth2-client" name="oauth2_client_id" autocomplete="off" />
            </Field>
            <Field
              id="endpoint-oauth2-secret"
              label="OAuth2 client secret"
              hint="Empty on a save: the stored one is kept, unless the URL or token URL moves to another origin"
            >
              <input
                id="endpoint-oauth2-secret"
                name="oauth2_client_secret"
                type="password"
                autocomplete="new-password"
                aria-describedby="endpoint-oauth2-secret-hint"
              />
            </Field>
            <Field id="endpoint-oauth2-scope" label="OAuth2 scope">
              <input id="endpoint-oauth2-scope" name="oauth2_scope" />
            </Field>
            {/* batches (docs/webhooks.md, "Batches"): HTTP receivers only; an empty size sends one event a request */}
            <Field
              id="endpoint-batch-size"
              label="Batch size (events a request)"
              hint="2 to 100; empty: one event a request"
            >
              <input
                id="endpoint-batch-size"
                name="batch_max_events"
                type="number"
                min="2"
                max="100"
                step="1"
                placeholder="none"
                aria-describedby="endpoint-batch-size-hint"
              />
            </Field>
            <Field
              id="endpoint-batch-wait"
              label="Batch wait (ms)"
              hint="0 to 10000: how long a batch may wait to fill"
            >
              <input
                id="endpoint-batch-wait"
                name="batch_max_wait_ms"
                type="number"
                min="0"
                max="10000"
                step="1"
                placeholder="0"
                aria-describedby="endpoint-batch-wait-hint"
              />
            </Field>
          </div>
          {/* docs/webhooks.md, "Payload versions": the first is what an endpoint that names none gets */}
          <Field id="endpoint-version" label="Payload version" hint="The body shape the receiver was built against">
            <select id="endpoint-version" name="payload_version" aria-describedby="endpoint-version-hint">
              {PAYLOAD_VERSIONS.map((v, i) => (
                <option value={v.version}>
                  {v.version}
                  {i === 0 ? " (first, the default)" : ""}
                  {i === PAYLOAD_VERSIONS.length - 1 ? " (latest: adds timestamp)" : ""}
                </option>
              ))}
            </select>
          </Field>
        </div>
        <button type="submit" id="endpoint-save" class="primary">Create endpoint</button>
        <button type="reset" id="endpoint-cancel">Clear</button>
      </form>
    </details>
    <details id="recover-panel" class="panel">
      <summary>
        <h3>Send failed deliveries again</h3>
      </summary>
      <form id="recover-form">
        <div class="fields">
          <Field id="recover-endpoint" label="Send failed deliveries again, for endpoint" wide>
            <select id="recover-endpoint" name="endpoint" required></select>
          </Field>
          <Field id="recover-since" label="Failed since (UTC)">
            <input id="recover-since" name="since" type="datetime-local" required />
          </Field>
          <Field id="recover-skipped" label="Events it missed while disabled">
            <select id="recover-skipped" name="include_skipped">
              <option value="">Leave them</option>
              <option value="true">Send them too, in order</option>
            </select>
          </Field>
        </div>
        <button type="submit" class="primary">Recover</button>
      </form>
    </details>
  </section>
);

const Legend = () => (
  <span class="legend">
    <span class="key succeeded">succeeded</span> <span class="key failed">failed</span>{" "}
    <span class="key pending">pending</span>
  </span>
);

const Deliveries = () => (
  <section id="deliveries" class="card" aria-labelledby="deliveries-title">
    <h2 id="deliveries-title">Delivery log</h2>
    <SearchResult />
    <figure class="chart">
      <svg
        id="chart"
        role="img"
        aria-labelledby="chart-title"
        viewBox="0 0 480 120"
        preserveAspectRatio="none"
        width="100%"
        height="120"
      >
        <title id="chart-title">Deliveries per hour over the last day, by status</title>
        <line class="baseline" x1="0" y1="119.5" x2="480" y2="119.5" />
      </svg>
      <p class="axis" aria-hidden="true">
        <span id="axis-start">24 h ago</span>
        <span id="axis-middle">12 h ago</span>
        <span>now</span>
      </p>
      <figcaption>
        Last 24 whole hours (UTC)<span id="chart-scope"></span>, per hour: <Legend />
        <span id="chart-empty" class="muted" hidden>No delivery in the last 24 hours.</span>
      </figcaption>
    </figure>
    <form id="filters" class="filters">
      <Field id="filter-status" label="Status">
        <select id="filter-status" name="status">
          <option value="">any</option>
          <option>pending</option>
          <option>succeeded</option>
          <option>failed</option>
        </select>
      </Field>
      <Field id="filter-type" label="Type">
        <select id="filter-type" name="type">
          <option value="">any</option>
          {EVENT_TYPES.map((t) => <option key={t}>{t}</option>)}
        </select>
      </Field>
      <Field id="filter-endpoint" label="Endpoint">
        <select id="filter-endpoint" name="endpoint_id">
          <option value="">any</option>
        </select>
      </Field>
      <Field id="filter-from" label="From (UTC)">
        <input id="filter-from" name="from" type="datetime-local" />
      </Field>
      <p class="actions">
        <button type="submit" class="primary">Filter</button>
        <button type="reset">Clear filters</button>
      </p>
    </form>
    <Table
      caption="Deliveries, newest first"
      columns={["When", "Type", "Status", "Endpoint"]}
      extra={["Attempts"]}
      body="delivery-rows"
      empty="No delivery yet. Create an endpoint and send it a test event: its delivery shows here."
    />
    <button type="button" id="next-page" hidden>Older deliveries</button>
    <div id="log-delivery-slot"></div>
  </section>
);

/**
 * One delivery and its attempts, opened from a list: the script moves it under the list it was opened from (the log's
 * or an endpoint's), so it is written once.
 */
const Delivery = () => (
  <div id="delivery-home">
    <section id="delivery" class="panel detail" aria-labelledby="delivery-title" hidden>
      <h3 id="delivery-title" tabindex={-1}>Delivery</h3>
      <dl id="delivery-facts" class="facts"></dl>
      <p class="actions">
        <button type="button" id="delivery-retry" class="primary">Retry now</button>
        <button type="button" id="delivery-acknowledge">Acknowledge</button>
      </p>
      <Table
        caption="Attempts"
        columns={["#", "When", "HTTP status", "Duration", "Response"]}
        body="attempt-rows"
        empty="No attempt yet: the first is made as soon as a worker takes the delivery."
      />
      {/* docs/webhooks.md, "What was sent": rendered again by the API, secrets masked */}
      <div id="delivery-request" class="request" hidden>
        <h4>Request sent</h4>
        <p id="delivery-request-note" class="muted">
          Each attempt POSTs this to the endpoint; secrets are masked, signatures are made per attempt.
        </p>
        <pre id="delivery-request-headers" class="headers"></pre>
        <pre id="delivery-request-body"></pre>
      </div>
    </section>
  </div>
);

/** The log's search result: what the id searched for is, above its records. */
const SearchResult = () => (
  <div id="search-result" class="panel search-result" role="status" hidden>
    <p id="search-summary"></p>
    <button type="button" id="search-clear">Clear search</button>
  </div>
);

/** One endpoint's page (`#endpoint/<id>`): its settings, its last 24 hours, its deliveries and their attempts. */
const EndpointPage = () => (
  <section id="endpoint-page" class="card" aria-labelledby="endpoint-title">
    <p class="crumbs">
      <a href="#overview">All endpoints</a>
    </p>
    <p id="endpoint-missing" class="empty" hidden>
      No endpoint of yours has this id. Pick one from the list of endpoints.
    </p>
    <div id="endpoint-found">
      <h2 id="endpoint-title" class="url" tabindex={-1}>Endpoint</h2>
      <p id="endpoint-status"></p>
      <p id="endpoint-actions" class="row-actions"></p>
      <div id="endpoint-secret-slot"></div>
      <h3>Settings</h3>
      <dl id="endpoint-settings" class="facts"></dl>
      <h3>Last 24 hours</h3>
      <dl id="endpoint-stats" class="stats"></dl>
      <p id="endpoint-notes" class="notes" hidden></p>
      <h3>Deliveries</h3>
      <Table
        caption="This endpoint's deliveries, newest first"
        columns={["When", "Type", "Status", "Attempts", "Batch"]}
        body="endpoint-delivery-rows"
        empty="No delivery to this endpoint yet. Send it a test event: its delivery shows here."
      />
      <button type="button" id="endpoint-next-page" hidden>Older deliveries</button>
      <div id="endpoint-delivery-slot"></div>
    </div>
  </section>
);

const Catalogue: FC<{ words?: Record<string, string> }> = ({ words }) => (
  <section id="catalogue" class="card" aria-labelledby="catalogue-title">
    <h2 id="catalogue-title">Event catalogue</h2>
    <p class="lead">Every event type an endpoint can receive, with an example body.</p>
    {CATALOGUE.map((entry) => (
      <details key={entry.type}>
        <summary>
          <code>{entry.type}</code>{" "}
          <span>
            <Description text={entry.description} words={words} />
          </span>
        </summary>
        <pre>{JSON.stringify(entry.example, null, 2)}</pre>
      </details>
    ))}
  </section>
);

/**
 * Where a portal's customer lands after Close (the sign-in's place, which the script shows once the session is over):
 * no form, since a portal has no password; the way back is a new link from the platform.
 */
const Closed = () => (
  <section id="sign-in" class="card narrow" aria-labelledby="sign-in-title">
    <h2 id="sign-in-title">Closed</h2>
    <p class="lead">This session has ended. To open it again, ask for a new link where you found this one.</p>
    <p id="sign-in-error" class="error" role="alert"></p>
  </section>
);

/**
 * The console's page; with `portal`, a portal link's (routes/console/portal.ts): the platform's name, logo, colour and
 * support address in place of the console's, Close in place of Sign out, and the catalogue in a customer's words.
 */
export const ConsolePage = ({ portal }: { portal?: PortalLook } = {}) => {
  const name = portal ? portal.name ?? "Webhooks" : "Payments console";
  const home = portal && `/console/portal/${portal.linkId}`;
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="color-scheme" content="light dark" />
        <title>{name}</title>
        <link rel="stylesheet" href="/console/assets/console.css" />
        {portal?.accent && <link rel="stylesheet" href={`${home}/brand.css`} />}
        <script src="/console/assets/console.js" type="module"></script>
      </head>
      <body>
        <header class="top">
          <div class="bar">
            <h1 class={portal?.logo ? "brand logo" : "brand"}>
              {portal?.logo && <img src={`${home}/logo`} alt="" height={28} />}
              {name}
            </h1>
            <nav id="app-nav" aria-label={portal ? "Webhooks" : "Console"} hidden>
              <a href="#overview">Overview</a> <a href="#log">Delivery log</a> <a href="#catalogue">Event catalogue</a>
              {" "}
              {portal?.supportUrl && (
                <>
                  <a href={portal.supportUrl} target="_blank" rel="noopener noreferrer">Support</a>
                  {" "}
                </>
              )}
              <button type="button" id="sign-out">{portal ? "Close" : "Sign out"}</button>
            </nav>
            <form id="search" role="search" class="search" hidden>
              <label for="search-id">Search by id</label>
              <input
                id="search-id"
                name="id"
                placeholder="event, delivery or transaction id"
                autocomplete="off"
                spellcheck={false}
                required
              />
              <button type="submit">Search</button>
            </form>
          </div>
        </header>
        <main>
          {portal ? <Closed /> : <SignIn />}
          <div id="app" hidden>
            <p id="notice" role="status"></p>
            <div id="view-overview">
              <Attention />
              <Endpoints />
            </div>
            <div id="view-log" hidden>
              <Deliveries />
            </div>
            <div id="view-endpoint" hidden>
              <EndpointPage />
            </div>
            <div id="view-catalogue" hidden>
              <Catalogue words={portal?.words} />
            </div>
            <Delivery />
          </div>
        </main>
      </body>
    </html>
  );
};
