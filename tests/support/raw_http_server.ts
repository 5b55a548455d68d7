/**
 * A bare HTTP/1.1 server on loopback that keeps connections open, counting connections and requests as they arrive
 * (what a receiver sees on the wire, below any HTTP library): for the tests of how webhook attempts use connections.
 *
 * `behaviour(n)` decides the answer to the n-th request (from 1) over all connections: "answer" (200 "ok"), "large"
 * (200 with 64 KiB), "drop" (close the connection without answering) or "hang" (never answer, the connection
 * left open). With `tls`, it speaks HTTPS.
 */
export type Behaviour = "answer" | "large" | "drop" | "hang";

export function rawHttpServer(
  behaviour: (n: number) => Behaviour = () => "answer",
  tls?: { cert: string; key: string },
) {
  const listener = tls
    ? Deno.listenTls({ hostname: "127.0.0.1", port: 0, ...tls })
    : Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const seen = { connections: 0, closed: 0, requests: [] as string[] };
  const serve = async (conn: Deno.Conn) => {
    const buffer = new Uint8Array(65536);
    let text = "";
    const close = () => {
      seen.closed++;
      try {
        conn.close();
      } catch { /* already closed */ }
    };
    for (;;) {
      const n = await conn.read(buffer).catch(() => null);
      if (n === null) return close();
      text += new TextDecoder().decode(buffer.subarray(0, n));
      const end = text.indexOf("\r\n\r\n");
      const length = Number(/content-length: *(\d+)/i.exec(text)?.[1] ?? 0);
      if (end < 0 || text.length < end + 4 + length) continue;
      seen.requests.push(text.slice(0, end + 4 + length));
      text = text.slice(end + 4 + length);
      const what = behaviour(seen.requests.length);
      if (what === "drop") return close();
      if (what === "hang") continue;
      const body = what === "large" ? "x".repeat(65536) : "ok";
      await conn.write(new TextEncoder().encode(`HTTP/1.1 200 OK\r\ncontent-length: ${body.length}\r\n\r\n${body}`))
        .catch(() => {});
    }
  };
  (async () => {
    for await (const conn of listener) {
      seen.connections++;
      serve(conn);
    }
  })().catch(() => {});
  const port = (listener.addr as Deno.NetAddr).port;
  return { url: `${tls ? "https" : "http"}://127.0.0.1:${port}`, port, seen, close: () => listener.close() };
}
