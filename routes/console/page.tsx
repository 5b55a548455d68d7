import type { FC } from "hono/jsx";
import { CATALOGUE } from "../../domain/webhooks/catalogue.ts";
import { EVENT_TYPES } from "../../domain/webhooks/events.ts";

/**
 * The console's one page, rendered here; `assets/console.js` signs in, calls the public API with the token it keeps
 * for the tab (never in a URL, never in localStorage) and fills the tables (README, Integrator console).
 */
const Field: FC<{ id: string; label: string; children: unknown }> = ({ id, label, children }) => (
  <p class="field">
    <label for={id}>{label}</label>
    {children}
  </p>
);

/** A table the script fills: its caption, its column headers, and the id of its body. */
const Table: FC<{ caption: string; columns: string[]; body: string }> = ({ caption, columns, body }) => (
  <table>
    <caption>{caption}</caption>
    <thead>
      <tr>
        {columns.map((c) => <th key={c} scope="col">{c}</th>)}
      </tr>
    </thead>
    <tbody id={body}></tbody>
  </table>
);

const SignIn = () => (
  <section id="sign-in" aria-labelledby="sign-in-title">
    <h1 id="sign-in-title">Sign in</h1>
    <form id="sign-in-form">
      <Field id="username" label="Username">
        <input id="username" name="username" autocomplete="username" required />
      </Field>
      <Field id="password" label="Password">
        <input id="password" name="password" type="password" autocomplete="current-password" required />
      </Field>
      <button type="submit">Sign in</button>
      <p id="sign-in-error" class="error" role="alert"></p>
    </form>
  </section>
);

const Endpoints = () => (
  <section id="endpoints" aria-labelledby="endpoints-title">
    <h2 id="endpoints-title">Endpoints</h2>
    <form id="endpoint-form">
      <input type="hidden" id="endpoint-id" name="id" />
      <Field id="endpoint-url" label="URL">
        <input id="endpoint-url" name="url" type="url" required placeholder="https://example.com/webhooks" />
      </Field>
      <Field id="endpoint-mode" label="Delivery mode">
        <select id="endpoint-mode" name="delivery_mode">
          <option value="parallel">parallel</option>
          <option value="sequential">sequential</option>
        </select>
      </Field>
      <Field id="endpoint-events" label="Event types (comma separated, * for all)">
        <input id="endpoint-events" name="enabled_events" value="*" />
      </Field>
      <button type="submit" id="endpoint-save">Create endpoint</button>
      <button type="reset" id="endpoint-cancel">Clear</button>
    </form>
    <p id="endpoint-secret" class="secret" role="status" hidden></p>
    <Table caption="Your endpoints" columns={["URL", "Mode", "Status", "Actions"]} body="endpoint-rows" />
    <form id="recover-form">
      <Field id="recover-endpoint" label="Send failed deliveries again, for endpoint">
        <select id="recover-endpoint" name="endpoint" required></select>
      </Field>
      <Field id="recover-since" label="Failed since (UTC)">
        <input id="recover-since" name="since" type="datetime-local" required />
      </Field>
      <button type="submit">Recover</button>
    </form>
  </section>
);

const Deliveries = () => (
  <section id="deliveries" aria-labelledby="deliveries-title">
    <h2 id="deliveries-title">Delivery log</h2>
    <figure>
      <svg id="chart" role="img" aria-labelledby="chart-title" viewBox="0 0 480 120" width="100%" height="120">
        <title id="chart-title">Deliveries per hour over the last day, by status</title>
      </svg>
      <figcaption>
        Last 24 hours, per hour: <span class="succeeded">succeeded</span> <span class="failed">failed</span>{" "}
        <span class="pending">pending</span>
      </figcaption>
    </figure>
    <form id="filters">
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
      <button type="submit">Filter</button>
    </form>
    <Table caption="Deliveries, newest first" columns={["When", "Type", "Status", "Endpoint"]} body="delivery-rows" />
    <button type="button" id="next-page" hidden>Older deliveries</button>
    <section id="delivery" aria-labelledby="delivery-title" hidden>
      <h3 id="delivery-title" tabindex={-1}>Delivery</h3>
      <dl id="delivery-facts"></dl>
      <button type="button" id="delivery-retry">Retry now</button>
      <button type="button" id="delivery-acknowledge">Acknowledge</button>
      <Table caption="Attempts" columns={["#", "When", "HTTP status", "Duration", "Response"]} body="attempt-rows" />
    </section>
  </section>
);

const Catalogue = () => (
  <section id="catalogue" aria-labelledby="catalogue-title">
    <h2 id="catalogue-title">Event catalogue</h2>
    {CATALOGUE.map((entry) => (
      <details key={entry.type}>
        <summary>
          <code>{entry.type}</code> {entry.description}
        </summary>
        <pre>{JSON.stringify(entry.example, null, 2)}</pre>
      </details>
    ))}
  </section>
);

export const ConsolePage = () => (
  <html lang="en">
    <head>
      <meta charset="utf-8" />
      <meta name="viewport" content="width=device-width, initial-scale=1" />
      <title>Payments console</title>
      <link rel="stylesheet" href="/console/assets/console.css" />
      <script src="/console/assets/console.js" defer></script>
    </head>
    <body>
      <main>
        <SignIn />
        <div id="app" hidden>
          <nav aria-label="Console">
            <a href="#endpoints">Endpoints</a> <a href="#deliveries">Delivery log</a>{" "}
            <a href="#catalogue">Event catalogue</a> <button type="button" id="sign-out">Sign out</button>
          </nav>
          <p id="notice" role="status"></p>
          <Endpoints />
          <Deliveries />
          <Catalogue />
        </div>
      </main>
    </body>
  </html>
);
