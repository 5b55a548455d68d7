/**
 * The money path's figures, against a running service (docs/performance.md): sandbox pay-ins/s spread over 16
 * subjects, and the time from a pay-in's event to its receipt by a webhook receiver while pay-ins arrive at a fixed
 * rate on one subject. Measures only; nothing here asserts a timing.
 */
import { atFixedRate, load, type LoadResult } from "./http.ts";
import { percentile, startReceiver } from "./webhooks.ts";
import { cpf } from "../support/check_digits.ts";

const SUBJECTS = 16;

type Service = { base: string; auth: Record<string, string> };

/** A valid CPF for the n-th subject of a run (any n below 10^9). */
const subjectCpf = (n: number) => cpf(String(100_000_000 + n).slice(-9));

async function call(s: Service, method: string, path: string, body: unknown) {
  const res = await fetch(`${s.base}${path}`, {
    method,
    headers: { ...s.auth, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const answer = await res.json();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(answer)}`);
  return answer;
}

/** `count` new people of the service's company: their ids. */
async function people(s: Service, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const created = await call(s, "POST", "/api/v1/subject/people", {
      person: {
        document_number: subjectCpf(700_000 + i),
        document_type: "cpf",
        social_name: "Bench",
        fiscal_country: "BRA",
      },
    });
    ids.push(created.data.id);
  }
  return ids;
}

/** Sandbox pay-ins/s, each request to the next of 16 subjects, 32 connections. */
export async function payinsAcrossSubjects(s: Service, seconds: number, wrkDir: string): Promise<LoadResult> {
  const ids = await people(s, SUBJECTS);
  let next = 0;
  return await load({
    url: s.base,
    connections: 32,
    seconds,
    script: `${wrkDir}payin_many.lua`,
    env: { TOKEN: s.auth.authorization.slice("Bearer ".length), PERSON_IDS: ids.join(",") },
    request: () =>
      new Request(`${s.base}/api/sandbox/payins`, {
        method: "POST",
        headers: { ...s.auth, "content-type": "application/json" },
        body: JSON.stringify({ subject_id: ids[next++ % ids.length], value: "1.00", currency: "BRL" }),
      }),
  });
}

export type Latency = { p50Ms: number; p99Ms: number; sent: number; received: number; errors: number };

/**
 * Pay-ins on one subject at `rate` a second for `seconds`, sent on schedule whether or not the last one was answered
 * (an open loop: a slow service is not let off by sending less), each emitting `identified` to one endpoint whose
 * receiver answers at once; the event-to-receipt latency of every delivery that arrived.
 */
export async function eventToReceipt(s: Service, rate: number, seconds: number): Promise<Latency> {
  const receiver = await startReceiver();
  try {
    const [subject] = await people(s, 1);
    const endpoint = await call(s, "POST", "/api/v2/notifications/endpoints", {
      url: receiver.url,
      event_types: ["identified"],
    });
    const total = Math.round(rate * seconds);
    let errors = 0;
    await atFixedRate(
      rate,
      total,
      () =>
        call(s, "POST", "/api/sandbox/payins", { subject_id: subject, value: "1.00", currency: "BRL" })
          .then(() => {}, () => void errors++),
    );
    await receiver.until(total - errors, 60_000).catch(() => {});
    const latencies = (await receiver.latencies()).sort((a, b) => a - b);
    await call(s, "DELETE", `/api/v2/notifications/endpoints/${endpoint.data.id}`, undefined).catch(() => {});
    return {
      p50Ms: percentile(latencies, 0.5),
      p99Ms: percentile(latencies, 0.99),
      sent: total,
      received: latencies.length,
      errors,
    };
  } finally {
    await receiver.close();
  }
}
