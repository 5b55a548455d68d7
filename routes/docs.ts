// the path of the assets only: the package's main module evaluates the whole browser bundle (1.7 MB), which cost the
// service about 12 MB and a fifth of a second of every start for nothing it runs (docs/performance.md, "What changed")
import getAbsoluteFSPath from "swagger-ui-dist/absolute-path.js";
import { Hono } from "hono";
import { notFound } from "../domain/basics/errors.ts";
import { HTML_CSP } from "./policy/headers.ts";

const ASSETS: Record<string, string> = {
  "swagger-ui-bundle.js": "application/javascript; charset=utf-8",
  "swagger-ui.css": "text/css; charset=utf-8",
  "docs.js": "application/javascript; charset=utf-8",
};

/**
 * Starts Swagger UI; a file of its own, since the page's policy runs no inline script. Operations and schemas start
 * closed and a filter box finds an operation by its tag: the page then builds about 600 elements instead of 2,600
 * (docs/operations.md says what was measured and what still takes the time).
 *
 * A bearer token given to "Authorize" lives in the page only: `persistAuthorization` would keep it in localStorage,
 * on the console's origin, readable by any script there and left behind after the tab is closed. The key it was kept
 * under before is removed, so a token an earlier version stored does not outlive this one (docs/console.md).
 */
const START_SCRIPT = `localStorage.removeItem("authorized");
window.ui = SwaggerUIBundle({
  url: "/openapi.json",
  dom_id: "#docs",
  deepLinking: true,
  persistAuthorization: false,
  docExpansion: "none",
  defaultModelsExpandDepth: 0,
  filter: true,
});
`;

const PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Payments integrator API</title>
  <link rel="stylesheet" href="/docs/assets/swagger-ui.css">
</head>
<body>
  <div id="docs"></div>
  <script src="/docs/assets/swagger-ui-bundle.js"></script>
  <script src="/docs/assets/docs.js"></script>
</body>
</html>`;

/**
 * Interactive reference at /docs. The Swagger UI assets are served from the npm package, not a CDN,
 * so the page works on a machine without internet access.
 */
export function docsRoutes() {
  const dir = getAbsoluteFSPath();
  const cache = new Map<string, Uint8Array>();
  return new Hono()
    .get("/docs", (c) => c.html(PAGE, 200, { "content-security-policy": HTML_CSP }))
    .get("/docs/assets/:file", async (c) => {
      const file = c.req.param("file");
      const type = ASSETS[file];
      if (!type) throw notFound();
      let bytes = cache.get(file);
      if (!bytes) {
        bytes = file === "docs.js" ? new TextEncoder().encode(START_SCRIPT) : await Deno.readFile(`${dir}/${file}`);
        cache.set(file, bytes);
      }
      return c.body(bytes as Uint8Array<ArrayBuffer>, 200, {
        "content-type": type,
        "cache-control": "public, max-age=86400",
      });
    });
}
