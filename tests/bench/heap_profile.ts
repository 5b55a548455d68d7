/**
 * What a process allocates, by component (docs/performance.md, "What a request allocates"): V8's sampling heap
 * profiler, reached over the inspector of a process started with `--inspect`, counting the objects the young and the
 * old generation's collections took as well as those still alive, so it measures allocation, not what is retained.
 * Measures only; `profile_payin.ts` (PROF=heap) divides its figures by the requests of the load.
 */

/** One node of V8's sampling heap profile: a call frame, the bytes sampled in it, its callees. */
type HeapNode = {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: HeapNode[];
};

/** Where allocation is attributed, in the order the docs' table lists them; the first rule that matches wins. */
const COMPONENTS: [string, (url: string) => boolean][] = [
  ["postgres.js", (url) => /postgres/.test(url) && /node_modules|vendor/.test(url)],
  ["Hono", (url) => /node_modules\/.*hono/.test(url)],
  ["zod", (url) => /node_modules\/.*zod/.test(url)],
  ["uuid", (url) => /node_modules\/.*\/uuid\//.test(url)],
  [
    "graphile-worker and pg (the worker's jobs)",
    (url) => /node_modules\/.*(graphile-worker|\/pg\/|pg-protocol|pg-pool)/.test(url),
  ],
  ["Deno's HTTP server", (url) => /^ext:(deno_http|deno_fetch|deno_web|deno_net)/.test(url)],
  ["Deno's Node compatibility (sockets, Buffer)", (url) => /^(ext:deno_node|node:)/.test(url)],
  [
    "the server's own code (the service's routes and domain; the floor's handlers)",
    (url) => /\/(routes|domain)\/|\/main\.ts$|floor_server\.ts$/.test(url),
  ],
  ["other libraries", (url) => /node_modules/.test(url)],
  ["V8 and native, other", () => true],
];

/** Bytes sampled per component, and in all; and the heaviest frames (by self bytes) with their component. */
export type Allocation = {
  total: number;
  byComponent: Record<string, number>;
  frames: { frame: string; component: string; bytes: number }[];
};

export function componentOf(url: string): string {
  return COMPONENTS.find(([, test]) => test(url))![0];
}

const ROOT = new URL("../..", import.meta.url).href;

/**
 * Sums a profile's nodes by component, and its frames by name and place. A frame without a script (a built-in:
 * `Promise`, `Uint8Array`, a string's method) counts to the component of the nearest script that called it, since
 * that code chose to allocate; only what no script called is V8's own.
 */
export function summarize(head: HeapNode): Allocation {
  const byComponent: Record<string, number> = {};
  const frames = new Map<string, { component: string; bytes: number }>();
  let total = 0;
  const walk = (node: HeapNode, caller: string | null) => {
    const { url, functionName, lineNumber } = node.callFrame;
    const component = url || caller === null ? componentOf(url) : caller;
    if (node.selfSize > 0) {
      byComponent[component] = (byComponent[component] ?? 0) + node.selfSize;
      total += node.selfSize;
      const place = url.replace(ROOT, "").replace(/^.*\/(node_modules|vendor)\//, "");
      const key = `${functionName || "(anonymous)"} ${place}:${lineNumber + 1}`;
      const seen = frames.get(key) ?? { component: url ? component : "built-in, counted to its caller", bytes: 0 };
      seen.bytes += node.selfSize;
      frames.set(key, seen);
    }
    for (const child of node.children) walk(child, url ? component : caller);
  };
  walk(head, null);
  return {
    total,
    byComponent,
    frames: [...frames].map(([frame, f]) => ({ frame, ...f })).sort((a, b) => b.bytes - a.bytes),
  };
}

/**
 * Samples the allocation of the process whose inspector listens on `port` while `during` runs (one sample every
 * `intervalBytes` on average); answers the profile as V8 gives it (written as a `.heapprofile`, Chrome's DevTools
 * open it) and its summary.
 */
export async function sampleAllocations(
  port: number,
  during: () => Promise<void>,
  intervalBytes = 4096,
): Promise<{ profile: { head: HeapNode }; allocation: Allocation }> {
  const [target] = await (await fetch(`http://127.0.0.1:${port}/json/list`)).json();
  const ws = new WebSocket(target.webSocketDebuggerUrl);
  await new Promise((resolve, reject) => {
    ws.onopen = resolve;
    ws.onerror = reject;
  });
  let next = 0;
  const waiting = new Map<number, (message: { result?: unknown; error?: unknown }) => void>();
  ws.onmessage = (e) => {
    const message = JSON.parse(e.data);
    waiting.get(message.id)?.(message);
  };
  const call = (method: string, params: Record<string, unknown> = {}) =>
    new Promise<unknown>((resolve, reject) => {
      const id = ++next;
      waiting.set(id, (m) => m.error ? reject(new Error(`${method}: ${JSON.stringify(m.error)}`)) : resolve(m.result));
      ws.send(JSON.stringify({ id, method, params }));
    });
  try {
    await call("HeapProfiler.enable");
    await call("HeapProfiler.startSampling", {
      samplingInterval: intervalBytes,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true,
    });
    await during();
    const { profile } = await call("HeapProfiler.stopSampling") as { profile: { head: HeapNode } };
    return { profile, allocation: summarize(profile.head) };
  } finally {
    ws.close();
  }
}
