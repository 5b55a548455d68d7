/**
 * The bounds a request body meets before it is parsed (docs/limits.md, "Request bodies"): the JSON scanner that counts
 * values and depth as bytes arrive, and what an integrator sees of it, a 413 naming the bound, quickly, while the
 * service goes on answering others. Kept apart from limits_test.ts, whose limits are per company over time.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { JsonBounds, MAX_JSON_DEPTH, MAX_JSON_VALUES } from "../../routes/policy/json_bounds.ts";
import { FILE_ROUTES, MAX_FILELESS_BODY_BYTES } from "../../routes/policy/read_body.ts";
import { LOGO_MAX_BYTES } from "../../domain/integrators/portal_branding.ts";
import { newCompany, type Reply, setup, type TestContext } from "../support/helpers.ts";
import { ENDPOINTS } from "../support/endpoints.ts";
import { newPerson, textDocument } from "../support/subjects.ts";

const PEOPLE = "/api/v1/subject/people";
const encode = (text: string) => new TextEncoder().encode(text);

/** The values and depth of a JSON value, counted as the scanner means them. */
function shape(value: unknown): { values: number; depth: number } {
  if (value === null || typeof value !== "object") return { values: 1, depth: 0 };
  const children = (Array.isArray(value) ? value : Object.values(value)).map(shape);
  return {
    values: 1 + children.reduce((sum, c) => sum + c.values, 0),
    depth: 1 + Math.max(0, ...children.map((c) => c.depth)),
  };
}

/** What the scanner says of `bytes` fed in the pieces `cuts` makes, and the values it counted. */
function scan(bytes: Uint8Array, bounds: { values?: number; depth?: number } = {}, cuts: number[] = []) {
  const scanner = new JsonBounds(bounds.values ?? Infinity, bounds.depth ?? Infinity);
  let excess = null;
  let from = 0;
  for (const cut of [...cuts.filter((c) => c > 0 && c < bytes.length).sort((a, b) => a - b), bytes.length]) {
    excess ??= scanner.feed(bytes.subarray(from, cut));
    from = cut;
  }
  return { excess, values: scanner.values };
}

/** Strings that look like structure, escapes split anywhere, and characters of several UTF-8 bytes. */
const tricky = fc.constantFrom('"', "\\", '\\"', '"\\', "[", "]", "{", "}", ",", ":", '["a"]', "é", "😀", "\u0001");
const text = fc.oneof(fc.string({ unit: "binary" }), tricky, fc.array(tricky).map((parts) => parts.join("")));
const { json } = fc.letrec((tie) => ({
  json: fc.oneof(
    { depthSize: "small" },
    fc.oneof(text, fc.double({ noNaN: true, noDefaultInfinity: true }), fc.boolean(), fc.constant(null)),
    fc.array(tie("json")),
    fc.dictionary(text, tie("json")),
  ),
}));

Deno.test("the JSON bounds scanner", async (t) => {
  await t.step("counts the body, each member and each element, and the depth of its containers", () => {
    const sample = encode('{"a": [1, 2.5e3, {"b": "x"}], "c": null, "d": [], "e": {}, "f": true}');
    assert.deepEqual(scan(sample), { excess: null, values: 10 });
    assert.equal(scan(sample, { depth: 3 }).excess, null);
    assert.equal(scan(sample, { depth: 2 }).excess, "depth");
    assert.equal(scan(sample, { values: 10 }).excess, null);
    assert.equal(scan(sample, { values: 9 }).excess, "values");
  });

  await t.step("brackets, commas and escaped quotes inside strings count nothing", () => {
    const keyed = encode(String.raw`{"k\"[{,:": "v\\", "w": "\"]}\\\"[", "x": "\u005b"}`);
    assert.deepEqual(scan(keyed, { depth: 1 }), { excess: null, values: 4 });
    assert.deepEqual(scan(encode(JSON.stringify("[".repeat(100))), { depth: 0 }), { excess: null, values: 1 });
  });

  await t.step("the defaults: 10,000 values and 32 levels pass, one more does not", () => {
    const values = (n: number) => encode(`[${Array(n - 1).fill("0").join(",")}]`);
    const deep = (n: number) => encode("[".repeat(n) + "]".repeat(n));
    const byDefault = (bytes: Uint8Array) => new JsonBounds().feed(bytes);
    assert.equal(byDefault(values(MAX_JSON_VALUES)), null);
    assert.equal(byDefault(values(MAX_JSON_VALUES + 1)), "values");
    assert.equal(byDefault(deep(MAX_JSON_DEPTH)), null);
    assert.equal(byDefault(deep(MAX_JSON_DEPTH + 1)), "depth");
  });

  await t.step("cut anywhere, a text is counted as whole, byte by byte included", () => {
    const sample = encode(String.raw`{"a\\\"": ["é😀", "\\", "\"", {"[": "]"}], "b": [[1], [2, [3]]]}`);
    const whole = scan(sample);
    for (let cut = 0; cut <= sample.length; cut++) assert.deepEqual(scan(sample, {}, [cut]), whole, `cut at ${cut}`);
    assert.deepEqual(scan(sample, {}, Array.from(sample.keys())), whole);
  });

  // counted on the value written, not on JSON.parse's reading of it: Deno 2.9's V8 can read a key `"\""` as `"\\"`
  // once it has parsed an object with the latter key in the same place, so two keys become one
  await t.step("any JSON, however written and cut: the values and depth of the value written", () => {
    fc.assert(
      fc.property(json, fc.constantFrom(0, 2, "\t"), fc.array(fc.nat()), (value, indent, cuts) => {
        const bytes = encode(JSON.stringify(value, null, indent));
        const { values, depth } = shape(value);
        const at = cuts.map((c) => c % (bytes.length + 1));
        assert.deepEqual(scan(bytes, {}, at), { excess: null, values });
        assert.equal(scan(bytes, { depth }, at).excess, null);
        if (depth > 0) assert.equal(scan(bytes, { depth: depth - 1 }, at).excess, "depth");
        assert.equal(scan(bytes, { values: values - 1 }, at).excess, "values");
      }),
      { numRuns: 300 },
    );
  });
});

/**
 * Sends `request` while /healthz is asked again and again, each time after a 5 ms pause: answers the request's reply,
 * how long it took, and the longest one health check took, its pause included (a timer held up by a blocked event loop
 * counts too).
 */
async function whileCheckingHealth(ctx: TestContext, request: () => Promise<Reply>) {
  let done = false;
  let worstMs = 0;
  let checks = 0;
  const checking = (async () => {
    while (!done) {
      const start = performance.now();
      await new Promise((resolve) => setTimeout(resolve, 5));
      const res = await ctx.app.request("/healthz");
      await res.body?.cancel();
      assert.equal(res.status, 200);
      worstMs = Math.max(worstMs, performance.now() - start);
      checks++;
    }
  })();
  await new Promise((resolve) => setTimeout(resolve, 30)); // the checks are under way before the body goes
  const start = performance.now();
  const reply = await request();
  const ms = performance.now() - start;
  done = true;
  await checking;
  return { reply, ms, worstMs, checks };
}

function assertTooLarge(res: Reply, bound: RegExp) {
  assert.equal(res.status, 413, JSON.stringify(res.body).slice(0, 300));
  assert.deepEqual(Object.keys(res.body.errors), ["detail"]);
  assert.match(res.body.errors.detail, /^Payload Too Large: /);
  assert.match(res.body.errors.detail, bound);
}

Deno.test("request bodies are bounded before they are parsed", async (t) => {
  const ctx = await setup("body_bounds");
  const company = await newCompany(ctx);
  const personId = await newPerson(company);

  await t.step(
    "an endpoint body of 400,000 header names: 413 within 2 s, /healthz within 500 ms meanwhile",
    async () => {
      const headers: Record<string, string> = {};
      for (let i = 0; i < 400_000; i++) headers[`x-h-${i}`] = "v";
      const body = JSON.stringify({ url: "https://example.com/hooks", headers });
      assert.ok(body.length > 6_000_000);
      const { reply, ms, worstMs, checks } = await whileCheckingHealth(ctx, () => company.post(ENDPOINTS, body));
      assertTooLarge(reply, /at most 256 KiB/);
      assert.ok(ms < 2000, `answered after ${Math.round(ms)} ms`);
      assert.ok(checks > 0 && worstMs < 500, `a health check took ${Math.round(worstMs)} ms`);
    },
  );

  await t.step("an upload of a million keys, under a file route's 22 MB: 413 naming the values bound", async () => {
    const document: Record<string, unknown> = { ...textDocument(10) };
    for (let i = 0; i < 1_000_000; i++) document[`key-${String(i).padStart(7, "0")}`] = 1;
    const body = JSON.stringify({ document });
    assert.ok(body.length > 15_000_000 && body.length < 22 * 1024 * 1024);
    const upload = () => company.post(`/api/v1/subject/${personId}/documents`, body);
    const { reply, ms, worstMs, checks } = await whileCheckingHealth(ctx, upload);
    assertTooLarge(reply, /at most 10,000 values/);
    assert.ok(ms < 2000, `answered after ${Math.round(ms)} ms`);
    assert.ok(checks > 0 && worstMs < 500, `a health check took ${Math.round(worstMs)} ms`);
    assert.equal((await company.get(`/api/v1/subject/${personId}/documents`)).body.data.length, 0);
  });

  await t.step("a body nested 10,000 deep: 413 naming the depth bound", async () => {
    assertTooLarge(await company.post(ENDPOINTS, "[".repeat(10_000) + "]".repeat(10_000)), /at most 32 deep/);
    const deepPerson = `{"person": {"documents": ${"[".repeat(10_000)}${"]".repeat(10_000)}}}`;
    assertTooLarge(await company.post(PEOPLE, deepPerson), /at most 32 deep/);
  });

  await t.step(
    "a route without files takes 256 KiB: 300 KB is a 413, a person's 6 MB of documents is not",
    async () => {
      const endpoint = await company.post(ENDPOINTS, { url: "https://example.com/hooks", filter: "x".repeat(300_000) });
      assertTooLarge(endpoint, /at most 256 KiB/);
      const signIn = await ctx.app.request("/api/v1/sign_in", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ user: { username: "ana", password: "x".repeat(300_000) } }),
      });
      assertTooLarge({ status: signIn.status, body: await signIn.json(), headers: signIn.headers }, /at most 256 KiB/);

      // the largest endpoint body the API takes (every field at its longest) is far under the bound: its fields are
      // judged (422), not its size
      const largest = {
        url: "https://example.com/hooks",
        headers: Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`x-h-${i}`, "v".repeat(400)])),
        filter: `event_type == "${"é".repeat(980)}"`,
        client_certificate: { certificate: "c\n".repeat(8 * 1024), private_key: "k\n".repeat(4 * 1024) },
        oauth2: {
          token_url: `https://auth.example.com/${"t".repeat(2000)}`,
          client_id: "i".repeat(255),
          client_secret: "s".repeat(1024),
          scope: "s".repeat(1024),
          audience: "a".repeat(2048),
        },
      };
      assert.ok(JSON.stringify(largest).length > 45 * 1024);
      const fields = await company.post(ENDPOINTS, largest);
      assert.equal(fields.status, 422, JSON.stringify(fields.body).slice(0, 300));

      const person = await company.post(PEOPLE, {
        person: {
          document_number: "11144477735",
          document_type: "cpf",
          social_name: "Bia Lima",
          fiscal_country: "BRA",
          documents: Array.from({ length: 20 }, () => textDocument(300 * 1024)),
        },
      });
      assert.equal(person.status, 201, JSON.stringify(person.body).slice(0, 300));
      assert.equal((await company.get(`/api/v1/subject/${person.body.data.id}/documents`)).body.data.length, 20);
    },
  );

  await t.step(
    "the routes that take 22 MB: every one whose body can hold a file_data, and the subjects' writes",
    async () => {
      // deno-lint-ignore no-explicit-any
      const doc: any = await (await ctx.app.request("/openapi.json")).json();
      const holdsFile = (schema: unknown, seen = new Set<string>()): boolean => {
        if (!schema || typeof schema !== "object") return false;
        const ref = (schema as { $ref?: string }).$ref;
        if (ref) {
          return !seen.has(ref) &&
            (seen.add(ref), holdsFile(doc.components.schemas[ref.split("/").pop()!], seen));
        }
        if ("file_data" in ((schema as { properties?: object }).properties ?? {})) return true;
        return Object.values(schema).some((part) => holdsFile(part, seen));
      };
      const fileRoutes = Object.entries(doc.paths).flatMap(([path, methods]) =>
        Object.entries(methods as Record<string, { requestBody?: unknown }>)
          .filter(([, op]) => holdsFile(op.requestBody))
          .map(([method]) => `${method.toUpperCase()} ${path.replaceAll(/\{(\w+)\}/g, ":$1")}`)
      );
      // a portal link's logo is a file too, but a small one: its Base64 and the rest of the link fit the 256 KiB of a
      // route without files, which is all it is given
      const smallFiles = ["POST /api/v2/notifications/portal_links"];
      assert.ok(Math.ceil(LOGO_MAX_BYTES / 3) * 4 + 16 * 1024 < MAX_FILELESS_BODY_BYTES, "a logo fits a small body");
      assert.deepEqual(
        fileRoutes.filter((r) => !FILE_ROUTES.has(r) && !smallFiles.includes(r)),
        [],
        "a route carrying files has 22 MB",
      );
      const routes = Object.entries(doc.paths).flatMap(([path, methods]) =>
        Object.keys(methods as object).map((m) => `${m.toUpperCase()} ${path.replaceAll(/\{(\w+)\}/g, ":$1")}`)
      );
      assert.deepEqual([...FILE_ROUTES].filter((r) => !routes.includes(r)), [], "each names a route of the API");
      assert.deepEqual([...FILE_ROUTES].filter((r) => !fileRoutes.includes(r)).sort(), [
        "POST /api/v1/subject/companies",
        "PUT /api/v1/subject/companies/:id",
        "PUT /api/v1/subject/people/:id",
      ]);
    },
  );

  await ctx.close();
});
