/**
 * The methods each known path answers, for a `405` with `Allow` when a request uses another one. Built from the
 * routes registered on the app, so it cannot drift from them; middleware (method `ALL`) is not a route.
 */
export function allowedMethods(routes: { method: string; path: string }[]): (path: string) => string[] {
  const patterns = new Map<string, { re: RegExp; methods: Set<string> }>();
  for (const { method, path } of routes) {
    if (method === "ALL") continue;
    const entry = patterns.get(path) ?? { re: pathPattern(path), methods: new Set<string>() };
    entry.methods.add(method);
    // Hono answers HEAD with the GET handler
    if (method === "GET") entry.methods.add("HEAD");
    patterns.set(path, entry);
  }
  return (path) => {
    const methods = new Set<string>();
    for (const { re, methods: ms } of patterns.values()) if (re.test(path)) ms.forEach((m) => methods.add(m));
    return [...methods].sort();
  };
}

/** `/api/v1/subject/people/:id` → a RegExp matching one value per parameter segment, as the router does. */
function pathPattern(path: string): RegExp {
  const parts = path.split("/").map((part) =>
    part.startsWith(":") ? "[^/]+" : part === "*" ? ".*" : part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
  );
  return new RegExp(`^${parts.join("/")}$`);
}
