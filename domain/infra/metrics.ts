/**
 * A small Prometheus registry: counters and histograms with labels, rendered in the text exposition format.
 * Kept in-process; each instance exposes its own numbers and Prometheus sums them. Every label value comes from a
 * closed set (docs/limits.md, "What an anonymous request can grow"): the HTTP labels are mapped here, and each metric
 * keeps at most `MAX_SERIES` series, past which new label sets are counted under one `other` series.
 */
type Labels = Record<string, string>;

/** Series one metric keeps; a backstop well above what the closed label sets make (about 8 methods x 100 routes). */
export const MAX_SERIES = 2_000;
/** The label value of whatever is outside a closed set. */
const OTHER = "other";

const METHODS = new Set(["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]);
/** The `method` label: the methods the API can answer, any other (a client may send any token) `other`. */
export const methodLabel = (method: string): string => METHODS.has(method) ? method : OTHER;

/** The statuses the API answers (docs/errors.md); another one is labelled by its class, `2xx` to `5xx`. */
const STATUSES = new Set("200 201 204 304 400 401 403 404 405 408 409 410 413 415 422 429 500 502 503 504".split(" "));
/** The `status` label: the code when it is one the API answers, else its class. */
export const statusLabel = (status: number): string =>
  STATUSES.has(String(status)) ? String(status) : `${Math.min(5, Math.max(1, Math.floor(status / 100)))}xx`;

/** A label set past `MAX_SERIES`: the same names, every value `other`, so the rendered metric keeps its shape. */
function overflow(labels: Labels): Labels {
  return Object.fromEntries(Object.keys(labels).map((name) => [name, OTHER]));
}

/** A series' key: its labels by name, in name order, so the order a caller writes them in never splits a series. */
function key(labels: Labels): string {
  const names = Object.keys(labels);
  if (names.length > 1) names.sort();
  let k = "";
  for (const name of names) k += `${name}\u0000${labels[name]}\u0001`;
  return k;
}
const escape = (v: string) => v.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
const renderLabels = (labels: Labels, extra: Labels = {}) => {
  const all = { ...labels, ...extra };
  const parts = Object.entries(all).map(([k, v]) => `${k}="${escape(v)}"`);
  return parts.length ? `{${parts.join(",")}}` : "";
};

export class Counter {
  private values = new Map<string, { labels: Labels; value: number }>();
  constructor(readonly name: string, readonly help: string) {}
  inc(labels: Labels = {}, by = 1) {
    let k = key(labels);
    let entry = this.values.get(k);
    if (!entry && this.values.size >= MAX_SERIES) entry = this.values.get(k = key(labels = overflow(labels)));
    if (entry) entry.value += by;
    else this.values.set(k, { labels, value: by });
  }
  render(): string {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} counter`];
    for (const { labels, value } of this.values.values()) lines.push(`${this.name}${renderLabels(labels)} ${value}`);
    return lines.join("\n");
  }
}

const DEFAULT_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export class Histogram {
  private series = new Map<string, { labels: Labels; counts: number[]; sum: number; count: number }>();
  constructor(readonly name: string, readonly help: string, readonly buckets = DEFAULT_BUCKETS) {}
  observe(labels: Labels, seconds: number) {
    let k = key(labels);
    let s = this.series.get(k);
    if (!s && this.series.size >= MAX_SERIES) s = this.series.get(k = key(labels = overflow(labels)));
    if (!s) this.series.set(k, s = { labels, counts: this.buckets.map(() => 0), sum: 0, count: 0 });
    for (let i = 0; i < this.buckets.length; i++) if (seconds <= this.buckets[i]) s.counts[i]++;
    s.sum += seconds;
    s.count++;
  }
  render(): string {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} histogram`];
    for (const s of this.series.values()) {
      this.buckets.forEach((b, i) =>
        lines.push(`${this.name}_bucket${renderLabels(s.labels, { le: String(b) })} ${s.counts[i]}`)
      );
      lines.push(`${this.name}_bucket${renderLabels(s.labels, { le: "+Inf" })} ${s.count}`);
      lines.push(`${this.name}_sum${renderLabels(s.labels)} ${s.sum}`);
      lines.push(`${this.name}_count${renderLabels(s.labels)} ${s.count}`);
    }
    return lines.join("\n");
  }
}

export function gauge(name: string, help: string, samples: { labels?: Labels; value: number }[]): string {
  const lines = [`# HELP ${name} ${help}`, `# TYPE ${name} gauge`];
  for (const s of samples) lines.push(`${name}${renderLabels(s.labels ?? {})} ${s.value}`);
  return lines.join("\n");
}

export const metrics = {
  httpRequests: new Counter("http_requests_total", "HTTP requests by method, route and status"),
  httpDuration: new Histogram("http_request_duration_seconds", "HTTP request duration by method and route"),
  deliveries: new Counter(
    "webhook_deliveries_total",
    "Webhook delivery attempts by outcome (succeeded, failed_attempt, failed)",
  ),
  deliveryDuration: new Histogram("webhook_delivery_duration_seconds", "Duration of one webhook delivery attempt"),
  filterErrors: new Counter(
    "webhook_filter_errors_total",
    "Evaluations of an endpoint's filter that failed (a key the event lacks, a value of another type): no delivery",
  ),
  filterDeferred: new Counter(
    "webhook_filter_deferred_total",
    "Delivery records written before their filter was evaluated, the company's filter time being spent",
  ),
  deliveryLatency: new Histogram(
    "webhook_event_to_delivery_seconds",
    "Time from the event to its successful delivery",
    [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 3600],
  ),
};

export function renderMetrics(extra: string[] = []): string {
  return [...Object.values(metrics).map((m) => m.render()), ...extra].join("\n") + "\n";
}
