/**
 * HTTP load against a running service on loopback: wrk when it is installed (Debian package `wrk`),
 * otherwise a small fetch-based generator with the same shape of result.
 */
export type LoadResult = {
  requestsPerSecond: number;
  p50Ms: number;
  p95Ms: number;
  p99Ms: number;
  errors: number;
  tool: string;
};

export type LoadSpec = {
  url: string;
  connections: number;
  seconds: number;
  /** wrk Lua script (under bench/wrk) and the env it reads */
  script?: string;
  env?: Record<string, string>;
  /** the same request for the fallback generator */
  request: () => Request;
};

async function hasWrk(): Promise<boolean> {
  try {
    const { code } = await new Deno.Command("wrk", { args: ["--version"], stdout: "null", stderr: "null" }).output();
    return code === 0 || code === 1;
  } catch {
    return false;
  }
}

function parseDuration(text: string): number {
  const m = /^([\d.]+)(us|ms|s|m)$/.exec(text.trim());
  if (!m) return NaN;
  const n = Number(m[1]);
  return m[2] === "us" ? n / 1000 : m[2] === "ms" ? n : m[2] === "s" ? n * 1000 : n * 60_000;
}

/**
 * wrk prints the 50th, 75th, 90th and 99th percentiles; the 95th comes from a `done` hook, in a script that runs the
 * phase's own script first (its `dofile` finds its neighbours by its own path, so it stays where it is).
 */
async function withP95(script: string | undefined): Promise<string> {
  const path = await Deno.makeTempFile({ suffix: ".lua" });
  await Deno.writeTextFile(
    path,
    `${script ? `dofile(${JSON.stringify(script)})\n` : ""}` +
      `done = function(summary, latency, requests) io.write(string.format("P95 %d\\n", latency:percentile(95))) end\n`,
  );
  return path;
}

async function runWrk(spec: LoadSpec): Promise<LoadResult> {
  const script = await withP95(spec.script);
  const args = ["-t2", `-c${spec.connections}`, `-d${spec.seconds}s`, "--latency", "-s", script, spec.url];
  const out = await new Deno.Command("wrk", { args, env: spec.env, stdout: "piped", stderr: "piped" }).output()
    .finally(() => Deno.remove(script));
  const text = new TextDecoder().decode(out.stdout);
  const p95 = Number(/^P95 (\d+)$/m.exec(text)?.[1]) / 1000; // µs
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(text)?.[1]);
  const p50 = parseDuration(/\s50%\s+(\S+)/.exec(text)?.[1] ?? "");
  const p99 = parseDuration(/\s99%\s+(\S+)/.exec(text)?.[1] ?? "");
  const non2xx = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(text)?.[1] ?? 0);
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(text);
  const errors = non2xx + (socket ? socket.slice(1).reduce((a, b) => a + Number(b), 0) : 0);
  return { requestsPerSecond: rps, p50Ms: p50, p95Ms: p95, p99Ms: p99, errors, tool: "wrk" };
}

async function runFetch(spec: LoadSpec): Promise<LoadResult> {
  const latencies: number[] = [];
  let errors = 0;
  const deadline = performance.now() + spec.seconds * 1000;
  const client = Deno.createHttpClient({});
  await Promise.all(Array.from({ length: spec.connections }, async () => {
    while (performance.now() < deadline) {
      const started = performance.now();
      try {
        const res = await fetch(spec.request(), { client });
        await res.arrayBuffer();
        if (res.status >= 300) errors++;
      } catch {
        errors++;
      }
      latencies.push(performance.now() - started);
    }
  }));
  client.close();
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))];
  return {
    requestsPerSecond: latencies.length / spec.seconds,
    p50Ms: at(0.5),
    p95Ms: at(0.95),
    p99Ms: at(0.99),
    errors,
    tool: "fetch",
  };
}

export async function load(spec: LoadSpec): Promise<LoadResult> {
  return (await hasWrk()) ? await runWrk(spec) : await runFetch(spec);
}

/**
 * `total` calls of `send`, `rate` a second, each started on schedule whether or not the ones before were answered
 * (an open loop: a slow service is not let off by being sent less); resolves once every call settled.
 */
export async function atFixedRate(rate: number, total: number, send: () => Promise<unknown>): Promise<void> {
  const started = performance.now();
  const sends: Promise<unknown>[] = [];
  for (let i = 0; i < total; i++) {
    const wait = started + (i * 1000) / rate - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    sends.push(send());
  }
  await Promise.all(sends);
}
