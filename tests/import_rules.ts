/**
 * `deno task check` runs this: the import graph (from `deno info --json`) has no circle, and no module imports a
 * folder above its own layer (docs/architecture.md, "Layers"). Exits 1 naming every offending import.
 */

type Module = {
  specifier: string;
  dependencies?: { code?: { specifier: string }; type?: { specifier: string } }[];
};

/**
 * Layers from the bottom up; a module may import its own layer and those below (docs/architecture.md, "Layers", says
 * why each folder sits where it does). Within a layer imports may go either way, circles aside: routes/policy uses the
 * schemas of routes/openapi, and the feature routes share schemas.
 */
const LAYERS: [prefix: string, rank: number][] = [
  ["domain/basics/", 0],
  ["domain/infra/", 1],
  // webhooks in three rooms, each above the last: the outbox writes events and wakes, the endpoints room keeps what
  // integrators set and read, the engine delivers (docs/architecture.md, "Layers")
  ["domain/webhooks/outbox/", 2],
  // the broker transports: what each protocol needs, below the endpoints that check destinations and the engine
  // that publishes (docs/architecture.md, "Layers")
  ["domain/webhooks/destinations/", 2.05],
  ["domain/webhooks/endpoints/", 2.1],
  ["domain/webhooks/engine/", 2.2],
  // pull streams render and sign as the engine does, without its leases (docs/architecture.md, "Layers")
  ["domain/webhooks/streams/", 2.3],
  ["domain/integrators/", 2],
  ["domain/requests/", 2],
  ["domain/subjects/", 3],
  ["domain/bank_accounts/", 4],
  ["domain/rails/", 5],
  ["routes/policy/", 6],
  ["routes/openapi/", 6],
  ["routes/", 7],
  ["jobs/", 7],
  ["commands/", 8],
  ["main.ts", 8],
];

export function layerOf(path: string): number | null {
  for (const [prefix, rank] of LAYERS) if (path === prefix || path.startsWith(prefix)) return rank;
  return null;
}

/** Import edges between the repository's own modules, as repository-relative paths. */
export function localEdges(modules: Module[], root: string): [string, string][] {
  const rel = (specifier: string) => specifier.startsWith(root) ? specifier.slice(root.length) : null;
  const edges: [string, string][] = [];
  for (const m of modules) {
    const from = rel(m.specifier);
    if (!from) continue;
    for (const d of m.dependencies ?? []) {
      for (const target of [d.code?.specifier, d.type?.specifier]) {
        const to = target ? rel(target) : null;
        if (to && to !== from) edges.push([from, to]);
      }
    }
  }
  return edges;
}

/** Every circle as a list of files, found by a depth-first walk (Tarjan's strongly connected components). */
export function circles(edges: [string, string][]): string[][] {
  const next = new Map<string, string[]>();
  for (const [a, b] of edges) next.set(a, [...(next.get(a) ?? []), b]);
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, counter);
    low.set(v, counter++);
    stack.push(v);
    onStack.add(v);
    for (const w of next.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1) found.push(component.sort());
    }
  };
  for (const v of new Set(edges.flat())) if (!index.has(v)) visit(v);
  return found;
}

/** Imports that run up the layers. */
export function upwardImports(edges: [string, string][]): [string, string][] {
  return edges.filter(([from, to]) => {
    const a = layerOf(from);
    const b = layerOf(to);
    return a !== null && b !== null && b > a;
  });
}

if (import.meta.main) {
  const dir = new URL("..", import.meta.url);
  const commands = [...Deno.readDirSync(new URL("commands/", dir))].map((e) => `commands/${e.name}`);
  const modules: Module[] = [];
  for (const entry of ["main.ts", ...commands]) {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["info", "--json", entry],
      cwd: dir.pathname,
      stdout: "piped",
      stderr: "inherit",
    }).output();
    if (!out.success) Deno.exit(1);
    modules.push(...JSON.parse(new TextDecoder().decode(out.stdout)).modules);
  }
  const edges = [...new Map(localEdges(modules, dir.href).map((e) => [e.join(" "), e] as const)).values()];
  const problems = [
    ...circles(edges).map((c) => `import circle: ${c.join(" -> ")}`),
    ...upwardImports(edges).map(([a, b]) => `upward import: ${a} imports ${b}`),
  ];
  if (problems.length) {
    console.error(problems.join("\n"));
    Deno.exit(1);
  }
  console.log(`imports: ${edges.length} between ${new Set(edges.flat()).size} modules, no circle, none upward`);
}
