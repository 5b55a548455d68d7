/**
 * A TCP relay on loopback in front of a real broker, which a story can cut and restore: "the broker is down" for
 * one endpoint, without stopping a broker that other test files share. It counts the connections it carried (one
 * connection for many publishes) and can hold back the broker's answers (a confirm that never comes).
 */

import net from "node:net";
import tls from "node:tls";

export type TcpProxy = {
  /** The loopback port the relay listens on: the port of the endpoint's URL. */
  port: number;
  /** Refuses new connections and resets the open ones, as a broker that went away. */
  cut(): Promise<void>;
  /** Listens again on the same port and relays as before. */
  restore(): Promise<void>;
  /** The client connections relayed so far. */
  connections(): number;
  /** From now on, passes nothing the broker sends on to the clients: a publish waits for an answer that never comes. */
  hold(): void;
  close(): Promise<void>;
};

/**
 * Starts a relay from a free loopback port to `127.0.0.1:targetPort`. With `tls` it ends TLS with that certificate
 * and relays the plaintext: a broker's TLS scheme (amqps, rediss, mqtts) tested against the plaintext broker, with the
 * test authority of tests/fixtures/tls (NATS upgrades to TLS inside its protocol, which a relay cannot end).
 */
export async function startTcpProxy(
  targetPort: number,
  opts: { tls?: { cert: string; key: string } } = {},
): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>();
  let server: net.Server | null = null;
  let connections = 0;
  let holding = false;
  const listen = (port: number) =>
    new Promise<number>((resolve, reject) => {
      const relay = (client: net.Socket) => {
        connections++;
        const upstream = net.connect({ host: "127.0.0.1", port: targetPort });
        for (const socket of [client, upstream]) {
          sockets.add(socket);
          socket.on("close", () => sockets.delete(socket));
          socket.on("error", () => {});
        }
        client.pipe(upstream);
        upstream.on("data", (chunk) => holding || client.write(chunk));
        client.on("close", () => upstream.destroy());
        upstream.on("close", () => client.destroy());
      };
      const s = opts.tls ? tls.createServer(opts.tls, relay) : net.createServer(relay);
      s.once("error", reject);
      s.listen({ host: "127.0.0.1", port }, () => {
        server = s;
        resolve((s.address() as net.AddressInfo).port);
      });
    });
  const stop = async () => {
    const s = server;
    server = null;
    for (const socket of sockets) socket.resetAndDestroy();
    sockets.clear();
    if (s) await new Promise<void>((resolve) => s.close(() => resolve()));
  };
  const port = await listen(0);
  return {
    port,
    cut: stop,
    restore: async () => {
      if (!server) await listen(port);
    },
    connections: () => connections,
    hold: () => {
      holding = true;
    },
    close: stop,
  };
}
