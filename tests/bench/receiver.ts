/**
 * The benchmarks' webhook receiver, in a process of its own: integrators' servers are not in the service's process,
 * so the service's event loop and memory are measured without the receiving end. It answers 200 to every POST and
 * keeps, per path, how many arrived and each one's emit-to-receipt latency: the body's `id` is the delivery record's
 * UUIDv7, made when the event was emitted, so its first 48 bits are the emit time in ms.
 *
 * With a number as its argument it answers that many milliseconds after a delivery arrives, as a server across a
 * network would; with `--tls` as its second it speaks https, with the loopback certificate of tests/fixtures/tls; with
 * `--mtls` it also requires a client certificate issued by that folder's `client_ca.pem` (the mTLS phase,
 * tests/bench/mtls.ts), through `node:https`, since Deno.serve does not ask for one; `--node-tls` is the same server
 * without that requirement, so that the phase compares the certificate alone.
 *
 * `GET /__count?path=P` answers the count, `GET /__latencies?path=P` the latencies, `GET /__order?path=P` how many
 * arrived after a later record (out of order) and how many arrived again (duplicates), `POST /__reset?path=P` forgets
 * them. Started by `startReceiver` (tests/bench/webhooks.ts), which reads the port from the first line printed.
 */
const delayMs = Number(Deno.args[0] ?? 0);
type Arrivals = { received: number; latencies: number[]; seen: Set<string>; last: string; outOfOrder: number };
const paths = new Map<string, Arrivals>();
const at = (path: string) =>
  paths.get(path) ??
    paths.set(path, { received: 0, latencies: [], seen: new Set(), last: "", outOfOrder: 0 }).get(path)!;

const fixture = (name: string) => Deno.readTextFileSync(new URL(`../fixtures/tls/${name}`, import.meta.url));
const tls = ["--tls", "--mtls", "--node-tls"].includes(Deno.args[1])
  ? { cert: fixture("loopback.pem"), key: fixture("loopback.key") }
  : {};

async function handle(req: Request): Promise<Response> {
  const url = new URL(req.url);
  const path = url.searchParams.get("path") ?? "";
  if (url.pathname === "/__count") return Response.json(at(path).received);
  if (url.pathname === "/__latencies") return Response.json(at(path).latencies);
  if (url.pathname === "/__order") {
    const { received, seen, outOfOrder } = at(path);
    return Response.json({ out_of_order: outOfOrder, duplicates: received - seen.size });
  }
  if (url.pathname === "/__reset") {
    paths.delete(path);
    return new Response(null, { status: 204 });
  }
  const body = await req.json();
  const p = at(url.pathname);
  p.latencies.push(Date.now() - parseInt(body.id.slice(0, 8) + body.id.slice(9, 13), 16));
  p.received++;
  // Record ids are UUIDv7 in emission order: one below the highest seen arrived out of order.
  if (body.id < p.last) p.outOfOrder++;
  else p.last = body.id;
  p.seen.add(body.id);
  if (delayMs) await new Promise((r) => setTimeout(r, delayMs));
  return new Response("ok");
}

if (Deno.args[1] === "--mtls" || Deno.args[1] === "--node-tls") {
  const https = await import("node:https");
  const mutual = Deno.args[1] === "--mtls";
  const server = https.createServer(
    mutual ? { ...tls, ca: fixture("client_ca.pem"), requestCert: true, rejectUnauthorized: true } : tls,
    (req, res) => {
      const chunks: Uint8Array<ArrayBuffer>[] = [];
      req.on("data", (chunk: Uint8Array<ArrayBuffer>) => chunks.push(chunk));
      req.on("end", async () => {
        const body = req.method === "POST" ? new Blob(chunks) : undefined;
        const answer = await handle(new Request(`https://127.0.0.1${req.url}`, { method: req.method, body }));
        res.writeHead(answer.status, { "content-type": answer.headers.get("content-type") ?? "text/plain" });
        res.end(new Uint8Array(await answer.arrayBuffer()));
      });
    },
  );
  server.listen(0, "127.0.0.1", () => console.log((server.address() as { port: number }).port));
  Deno.addSignalListener("SIGTERM", () => server.close(() => Deno.exit(0)));
} else {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {}, ...tls }, handle);
  Deno.addSignalListener("SIGTERM", async () => {
    await server.shutdown();
    Deno.exit(0);
  });
  console.log((server.addr as Deno.NetAddr).port);
}
