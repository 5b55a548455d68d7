/** A real webhook receiver on loopback for the webhook tests: records what arrives and answers as told. */

export type Arrival = {
  raw: string;
  // deno-lint-ignore no-explicit-any
  body: any;
  signature: string | null;
  headers: Headers;
  path: string;
  receivedAt: number;
};

export type Receiver = {
  url: string;
  arrivals: Arrival[];
  /** The most deliveries ever in flight at once. */
  maxInFlight: () => number;
  /** Arrivals at one path (each test uses its own path, so tests share one receiver without mixing). */
  at: (path: string) => Arrival[];
  close: () => Promise<void>;
};

/**
 * `answer` decides each response (default 200 "ok"); it may wait to keep a delivery in flight. Arrivals are
 * recorded when the request comes in, before the answer.
 */
export function startReceiver(
  answer: (arrival: Arrival, nthAtPath: number) => Response | Promise<Response> = () => new Response("ok"),
): Receiver {
  const arrivals: Arrival[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    try {
      const raw = await req.text();
      let body: unknown = null;
      try {
        body = JSON.parse(raw);
      } catch { /* keep null */ }
      const path = new URL(req.url).pathname;
      const arrival: Arrival = {
        raw,
        body,
        signature: req.headers.get("service-signature"),
        headers: req.headers,
        path,
        receivedAt: Date.now(),
      };
      arrivals.push(arrival);
      return await answer(arrival, arrivals.filter((a) => a.path === path).length);
    } finally {
      inFlight--;
    }
  });
  const { port } = server.addr as Deno.NetAddr;
  return {
    url: `http://127.0.0.1:${port}`,
    arrivals,
    maxInFlight: () => maxInFlight,
    at: (path) => arrivals.filter((a) => a.path === path),
    close: () => server.shutdown(),
  };
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
