/**
 * The OpenAPI document as a client generator and a reader of /docs rely on it: operation ids and tags, servers and
 * tokens, x-request-id, the error responses, a lint with @redocly/cli, and every request example accepted as it stands.
 */
import assert from "node:assert/strict";
import { hashPassword } from "../../domain/integrators/passwords.ts";
import { usernameKey } from "../../domain/integrators/users.ts";
import { newCompany, setup } from "../support/helpers.ts";

type Operation = {
  operationId?: string;
  security?: unknown[];
  requestBody?: { content: { "application/json": { example?: unknown } } };
  responses: Record<string, { headers?: Record<string, { $ref?: string }> }>;
};
type Document = {
  servers: { url: string }[];
  tags: { name: string; description: string }[];
  info: { description: string };
  components: { headers: Record<string, unknown> };
  paths: Record<string, Record<string, Operation>>;
};

const CONFIG = new URL("../../deno.json", import.meta.url).pathname;

/**
 * The linter's warnings the document keeps, each for a reason:
 * - no license: the service has none to declare, and inventing one would be worse than none;
 * - `/api/v1/subject/people/{id}` next to `/api/v1/subject/{id}/...`: the paths are the interface's and cannot
 *   change; a real request never matches both, since `{id}` is a UUID and `people` is not one (a path that matches
 *   both has a non-UUID where an id goes, and is answered 400 whichever route takes it);
 * - no 4xx on `/healthz` and `/readyz`: they take no input and no token, so no client error is possible.
 */
const KEPT_WARNINGS = [
  "info-license #/info",
  "no-ambiguous-paths #/paths/~1api~1v1~1subject~1{id}~1documents",
  "no-ambiguous-paths #/paths/~1api~1v1~1subject~1{id}~1bank_accounts",
  "no-ambiguous-paths #/paths/~1api~1v1~1subject~1{id}~1transactions",
  "no-ambiguous-paths #/paths/~1api~1v1~1subject~1{id}~1transaction_values",
  "operation-4xx-response #/paths/~1healthz/get/responses",
  "operation-4xx-response #/paths/~1readyz/get/responses",
];

const operationsOf = (doc: Document) =>
  Object.entries(doc.paths).flatMap(([path, ops]) =>
    Object.entries(ops).map(([method, op]) => ({ path, method, op, name: `${method.toUpperCase()} ${path}` }))
  );

Deno.test("the OpenAPI document: what a client generator and a reader of /docs rely on", async (t) => {
  const ctx = await setup("openapi_document");
  try {
    const doc: Document = await (await ctx.app.request("/openapi.json")).json();
    const operations = operationsOf(doc);

    await t.step("every operation has a unique camelCase operationId and a described tag", () => {
      const ids = operations.map((o) => o.op.operationId);
      assert.deepEqual(operations.filter((o) => !o.op.operationId).map((o) => o.name), []);
      assert.equal(new Set(ids).size, ids.length);
      for (const id of ids) assert.match(id!, /^[a-z]+[A-Za-z]*$/);
      const described = new Set(doc.tags.filter((tag) => tag.description).map((tag) => tag.name));
      for (const { op, name } of operations) {
        for (const tag of (op as { tags?: string[] }).tags ?? []) assert.ok(described.has(tag), `${name}: ${tag}`);
      }
    });

    await t.step("servers, how to get a token and the webhook signature are in the document", () => {
      assert.deepEqual(doc.servers.map((s) => s.url), ["/"]);
      assert.match(doc.info.description, /deno task token/);
      assert.match(doc.info.description, /service-signature: t=<unix seconds>,v1=<hex>/);
      assert.match(doc.info.description, /HMAC-SHA256/);
    });

    await t.step("every response declares x-request-id, from one component", () => {
      assert.ok(doc.components.headers.RequestId);
      for (const { op, name } of operations) {
        for (const [status, response] of Object.entries(op.responses)) {
          assert.equal(response.headers?.["x-request-id"]?.$ref, "#/components/headers/RequestId", `${name} ${status}`);
        }
      }
    });

    await t.step("errors: 500 and 503 everywhere, 401 and 429 behind a token, 413 on every POST and PUT", () => {
      for (const { path, method, op, name } of operations) {
        const statuses = Object.keys(op.responses);
        const authenticated = op.security === undefined;
        // sign-in is how a token is obtained, and so is a portal link's exchange: the /api routes without one
        const tokenless = ["/api/v1/sign_in", "/api/v2/notifications/portal_sessions"];
        assert.equal(authenticated, path.startsWith("/api/") && !tokenless.includes(path), name);
        const expected = ["500", ...(path === "/healthz" ? [] : ["503"])];
        if (authenticated) expected.push("401", "429");
        if (method === "post" || method === "put") expected.push("413");
        for (const status of expected) assert.ok(statuses.includes(status), `${name} lacks ${status}`);
      }
    });

    await t.step("@redocly/cli lint: no error, and only the warnings we chose to keep", async () => {
      const file = await Deno.makeTempFile({ prefix: "openapi_", suffix: ".json" });
      try {
        await Deno.writeTextFile(file, JSON.stringify(doc));
        const { imports } = JSON.parse(await Deno.readTextFile(CONFIG));
        // no network permission: the linter runs from the npm package alone
        const lint = await new Deno.Command(Deno.execPath(), {
          args: ["run", "--no-prompt", "--allow-read", "--allow-env", "--allow-sys", imports["@redocly/cli"], "lint"]
            .concat(["--format=json", file]),
          stdout: "piped",
          stderr: "piped",
        }).output();
        const stdout = new TextDecoder().decode(lint.stdout);
        assert.equal(lint.code, 0, stdout + new TextDecoder().decode(lint.stderr));
        const report: { totals: { errors: number }; problems: { ruleId: string; location: { pointer: string }[] }[] } =
          JSON.parse(stdout);
        assert.equal(report.totals.errors, 0);
        const warnings = report.problems.map((p) => `${p.ruleId} ${p.location[0].pointer}`).sort();
        assert.deepEqual(warnings, KEPT_WARNINGS.toSorted());
      } finally {
        await Deno.remove(file);
      }
    });

    await t.step("every request body example is accepted as it stands", async () => {
      const company = await newCompany(ctx);
      const ids: Record<string, string> = {};
      const example = (operationId: string) => {
        const found = operations.find((o) => o.op.operationId === operationId);
        assert.ok(found, operationId);
        const body = found.op.requestBody?.content["application/json"].example;
        assert.ok(body !== undefined, `${operationId} has no example`);
        return { ...found, body };
      };
      /** Sends the example; the ids in the path, and those the sandbox examples stand for, are real ones. */
      const send = async (operationId: string, pathIds: Record<string, string> = {}) => {
        const { method, path, body } = example(operationId);
        const url = path.replace(/\{(\w+)\}/g, (_, name: string) => pathIds[name]);
        const sent = typeof body === "object" && body !== null && "subject_id" in body
          ? { ...body, subject_id: ids.person, ...("bank_account_id" in body ? { bank_account_id: ids.account } : {}) }
          : typeof body === "object" && body !== null && "cursor" in body
          ? { cursor: ids.cursor } // a cursor is signed for its stream: the example stands for one of this stream's
          : typeof body === "object" && body !== null && "transaction" in body
          ? { transaction: { ...(body.transaction as object), subject_id: ids.person, to_bank_account_id: ids.brl } }
          : body;
        const res = await company.call(method.toUpperCase(), url, sent);
        assert.ok(
          res.status === 200 || res.status === 201 || res.status === 202,
          `${operationId}: ${res.status} ${JSON.stringify(res.body)}`,
        );
        return res.body;
      };
      const sentAll: string[] = [];
      const run = async (operationId: string, pathIds?: Record<string, string>) => {
        sentAll.push(operationId);
        return await send(operationId, pathIds);
      };

      ids.person = (await run("registerPerson")).data.id;
      await run("updatePerson", { id: ids.person });
      await run("uploadDocument", { id: ids.person });
      ids.account = (await run("createSubjectBankAccount", { id: ids.person })).data.id;
      await run("updateSubjectBankAccount", { id: ids.person, bank_account_id: ids.account });
      await run("createInternationalBankAccount");
      const endpoint = (await run("createWebhookEndpoint")).data.id;
      await run("updateWebhookEndpoint", { id: endpoint });
      await run("sendWebhookTestEvent", { id: endpoint });
      await run("recoverWebhookEndpoint", { id: endpoint });
      const stream = (await run("createWebhookStream")).data.id;
      await run("updateWebhookStream", { id: stream });
      await run("listenWebhookStream");
      ids.cursor = (await company.get(`/api/v2/notifications/streams/${stream}`)).body.data.cursor;
      await run("acknowledgeWebhookStream", { id: stream });
      await run("createSandboxPayin");
      await run("createSandboxCardPayment");
      await run("createSandboxPayout");
      // a wire waiting for correction, so the correction example has something to correct
      const refused = await company.post("/api/sandbox/payouts", {
        subject_id: ids.person,
        bank_account_id: ids.account,
        value: "10.00",
        currency: "BRL",
        fail_with: "AC03",
      });
      assert.equal(refused.status, 201, JSON.stringify(refused.body));
      await run("correctWireBankAccount", { id: refused.body.data.wire_id });

      const charge = (await run("createSandboxPixCharge")).data.id;
      await run("paySandboxPixCharge", { id: charge });
      await run("createSandboxBankTransaction");
      await run("reproveSandboxSubject", { id: ids.person });
      await run("requestSandboxSubjectDocuments", { id: ids.person });
      const subscription = (await run("createSandboxSubscription")).data.id;
      await run("cancelSandboxSubscription", { id: subscription });
      const clock = (await run("createSandboxTestClock")).data.id;
      await run("advanceSandboxTestClock", { id: clock });
      const own = await company.get("/api/v1/bank_accounts");
      ids.brl = own.body.data.find((a: { internal: boolean; currency: string }) =>
        a.internal && a.currency === "BRL"
      ).id;
      const payment = (await run("createTransaction")).data.id;
      await run("paySandboxTransaction", { id: payment });
      // the sign-in example's user, with the example's password
      const { user } = example("signIn").body as { user: { username: string; password: string } };
      await ctx.sql`insert into users (id, company_id, username, username_key, name, password_hash)
                    values (${crypto.randomUUID()}, ${company.id}, ${user.username}, ${usernameKey(user.username)},
                            'Ana', ${await hashPassword(user.password)})`;
      await run("signIn");
      const link = (await run("createPortalLink")).data;
      // the exchange example's code stands for this link's: only its hash is stored
      const { code } = example("createPortalSession").body as { code: string };
      await ctx.sql`update portal_links set code_hash = sha256(convert_to(${code}, 'UTF8')) where id = ${link.id}`;
      await run("createPortalSession");
      const customer = (await run("registerCompanyCustomer")).data.id;
      await run("updateCompanyCustomer", { id: customer });
      const withBody = operations.filter((o) => o.op.requestBody).map((o) => o.op.operationId!);
      assert.deepEqual(withBody.filter((id) => !sentAll.includes(id)), [], "examples no step sends");
    });
  } finally {
    await ctx.close();
  }
});
