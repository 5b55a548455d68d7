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
  /** The most requests ever in flight at once at `path` (or at any path). */
  maxInFlight: (path?: string) => number;
  /** Arrivals at one path (each test uses its own path, so tests share one receiver without mixing). */
  at: (path: string) => Arrival[];
  close: () => Promise<void>;
};

/**
 * `answer` decides each response (default 200 "ok"); it may wait to keep a delivery in flight. Arrivals are
 * recorded when the request comes in, before the answer. `listen` picks the address (127.0.0.1 and a free port by
 * default) and, with a certificate and its key, serves https.
 */
export function startReceiver(
  answer: (arrival: Arrival, nthAtPath: number) => Response | Promise<Response> = () => new Response("ok"),
  listen: { hostname?: string; port?: number; cert?: string; key?: string } = {},
): Receiver {
  const arrivals: Arrival[] = [];
  const inFlight = new Map<string, number>();
  const maxInFlight = new Map<string, number>();
  const enter = (key: string) => {
    inFlight.set(key, (inFlight.get(key) ?? 0) + 1);
    maxInFlight.set(key, Math.max(maxInFlight.get(key) ?? 0, inFlight.get(key)!));
  };
  const leave = (key: string) => inFlight.set(key, inFlight.get(key)! - 1);
  const { hostname = "127.0.0.1", port: wanted = 0, cert, key } = listen;
  const options = { hostname, port: wanted, onListen: () => {} };
  const server = Deno.serve(cert && key ? { ...options, cert, key } : options, async (req) => {
    const path = new URL(req.url).pathname;
    enter("*");
    enter(path);
    try {
      const raw = await req.text();
      let body: unknown = null;
      try {
        body = JSON.parse(raw);
      } catch { /* keep null */ }
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
      leave("*");
      leave(path);
    }
  });
  const { port } = server.addr as Deno.NetAddr;
  return {
    url: `${cert ? "https" : "http"}://${hostname}:${port}`,
    arrivals,
    maxInFlight: (path = "*") => maxInFlight.get(path) ?? 0,
    at: (path) => arrivals.filter((a) => a.path === path),
    close: () => server.shutdown(),
  };
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
