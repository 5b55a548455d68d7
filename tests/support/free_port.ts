/** A loopback port nothing listens on right now (the kernel's choice), for a server the caller is about to start. */
export function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  return port;
}

/** Whether anything accepts a TCP connection on loopback `port` now (a server that should have stopped, say). */
export async function accepts(port: number): Promise<boolean> {
  try {
    (await Deno.connect({ hostname: "127.0.0.1", port })).close();
    return true;
  } catch {
    return false;
  }
}
