/**
 * A process and everything it started, for a test that runs a command through `deno task`: the task runs the command
 * as a child of its own, and SIGKILL of the task alone leaves that child running with the test's pipes open, so a
 * test that waits for its output to end waits forever.
 */

/**
 * The processes below `pid` (its children, theirs, ...), from `ps` at this instant: a test's permissions do not let it
 * read /proc itself (Deno asks for all of them), but they let it run a command.
 */
export async function descendantsOf(pid: number): Promise<number[]> {
  const children = new Map<number, number[]>();
  try {
    const out = await new Deno.Command("ps", { args: ["-e", "-o", "pid=,ppid="], stdout: "piped", stderr: "null" })
      .output();
    for (const line of new TextDecoder().decode(out.stdout).split("\n")) {
      const [child, parent] = line.trim().split(/\s+/).map(Number);
      if (!child || !parent) continue;
      children.set(parent, [...(children.get(parent) ?? []), child]);
    }
  } catch {
    return []; // no ps: the process alone
  }
  const found: number[] = [];
  const queue = [pid];
  while (queue.length > 0) {
    const next = children.get(queue.shift()!) ?? [];
    found.push(...next);
    queue.push(...next);
  }
  return found;
}

/** Sends `signal` to `pid` and to every process below it, found before any is signalled (an orphan moves to init). */
export async function killTree(pid: number, signal: Deno.Signal): Promise<void> {
  const below = await descendantsOf(pid);
  for (const p of [pid, ...below]) {
    try {
      Deno.kill(p, signal);
    } catch {
      // already gone
    }
  }
}
