/// <reference lib="dom" />
/**
 * The console's first story in a real browser: sign in, an endpoint, a delivery that fails and one retried by hand,
 * rotate, disable, enable and recover, at 1280 and 360 px, with axe-core and the page's policy watched throughout.
 * The endpoint page, the search, the attention states and the chart are console_pages_test.ts's.
 */
// The functions handed to page.evaluate run in the browser: they are typed against the DOM.
import assert from "node:assert/strict";
import { createUser } from "../../domain/integrators/users.ts";
import { emitEvent } from "../../domain/webhooks/outbox/events.ts";
import { freePort } from "../support/free_port.ts";
import { signToken } from "../../domain/integrators/tokens.ts";
import { eventually, setup, TEST_TOKENS } from "../support/helpers.ts";
import { startReceiver } from "../support/webhook_receiver.ts";
import {
  assertAccessible,
  click,
  filter,
  fontDependentMarks,
  haveChromium,
  launchBrowser,
  rows,
  screenshot,
  view,
} from "../support/console_page.ts";

Deno.test({
  name: "the console in a real browser: sign in, an endpoint, a delivery that fails, a retry that succeeds",
  ignore: !haveChromium,
  fn: async (t) => {
    const ctx = await setup("console", { worker: true, env: { WEBHOOK_RETRY_SCHEDULE: "600" } });
    let failing = false;
    const rx = startReceiver(() =>
      failing
        ? new Response("receiver down for maintenance", { status: 500, headers: { "x-request-id": "rx-42" } })
        : new Response("ok")
    );
    const port = freePort();
    const server = Deno.serve({ hostname: "127.0.0.1", port, onListen: () => {} }, ctx.app.fetch);
    const base = `http://127.0.0.1:${port}`;
    const companyId = crypto.randomUUID();
    const created = await createUser(ctx.sql, { companyId, username: `console-${companyId.slice(0, 8)}` });
    assert.ok("password" in created);
    const browser = await launchBrowser();
    const page = await browser.newPage();
    await page.setViewport({ width: 1280, height: 860 });
    const elsewhere: string[] = [];
    page.on("request", (req) => {
      if (!req.url().startsWith(base) && !req.url().startsWith("data:")) elsewhere.push(req.url());
    });
    const violations: string[] = [];
    page.on("console", (m) => m.text().includes("Content Security Policy") && violations.push(m.text()));
    const pageErrors: string[] = [];
    page.on("pageerror", (err) => pageErrors.push(String(err)));
    page.on("requestfailed", (req) => pageErrors.push(`${req.url()}: ${req.failure()?.errorText}`));
    try {
      await t.step("the page: a strict policy, no inline script or handler, every field labelled", async () => {
        const res = await page.goto(`${base}/console`);
        const csp = res!.headers()["content-security-policy"];
        assert.match(csp, /default-src 'none'/);
        assert.match(csp, /script-src 'self'(;|$)/);
        assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
        const html = await res!.text();
        assert.doesNotMatch(html, /\son[a-z]+\s*=/i, "no inline event handler");
        assert.doesNotMatch(html, /<script(?![^>]*\ssrc=)[^>]*>/i, "no inline script");
        const unlabelled = await page.$$eval(
          "input:not([type=hidden]), select",
          (fields) => fields.filter((f) => !(f as HTMLInputElement).labels?.length).map((f) => f.id),
        );
        assert.deepEqual(unlabelled, []);
        await assertAccessible(page, "the sign-in page");
      });

      await t.step("a wrong password is refused on the page; the right one signs in", async () => {
        await page.type("#username", created.user.username);
        await page.type("#password", "not the password");
        await page.keyboard.press("Enter");
        await page.waitForFunction(() => document.getElementById("sign-in-error")!.textContent !== "", {
          timeout: 5_000,
        })
          .catch((err) => {
            throw new Error(`${err.message}; the page's errors: ${pageErrors.join(" | ")}`);
          });
        assert.equal(await page.$eval("#app", (el) => (el as HTMLElement).hidden), true);
        await page.$eval("#password", (el) => (el as HTMLInputElement).value = "");
        await page.type("#password", created.password);
        await page.keyboard.press("Enter");
        await page.waitForFunction(() => !document.getElementById("app")!.hidden, { timeout: 5_000 }).catch(
          async (err) => {
            const said = await page.$eval("#sign-in-error", (el) => el.textContent);
            throw new Error(`${err.message}; the page said "${said}"; its errors: ${pageErrors.join(" | ")}`);
          },
        );
        assert.equal(page.url(), `${base}/console`, "nothing of the sign-in in the URL");
        const stored = await page.evaluate(() => ({ local: localStorage.length, session: sessionStorage.length }));
        assert.deepEqual(stored, { local: 0, session: 1 });
        await page.waitForFunction(() => !document.getElementById("endpoint-rows-empty")!.hidden);
        await assertAccessible(page, "the console with nothing in it yet");
      });

      await t.step("an endpoint created on the page shows its secret once and lists", async () => {
        await page.type("#endpoint-url", `${rx.url}/console`);
        await click(page, "#endpoint-form", "Create endpoint");
        await page.waitForFunction(() => document.querySelectorAll("#endpoint-rows tr").length === 1);
        const [[url, settings, status]] = await rows(page, "endpoint-rows");
        assert.deepEqual([url, status], [`${rx.url}/console`, "active"]);
        // its transport, delivery mode, signature scheme and subscribed event types, a line each
        assert.equal(settings, "HTTPparallelhmac-sha256, shared secretevery event type");
        assert.match(await page.$eval("#endpoint-secret", (el) => el.textContent!), /shown once.*: [0-9a-f]{64}$/);
      });

      await t.step("a sandbox event is delivered and the log on the page shows it succeeded", async () => {
        // the integrator's own backend, with the company's token: a customer, approved in the sandbox
        const token = await signToken(TEST_TOKENS, companyId);
        const call = async (path: string, body?: unknown) => {
          const res = await ctx.app.request(path, {
            method: "POST",
            headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
            body: body === undefined ? undefined : JSON.stringify(body),
          });
          return await res.json();
        };
        const person = await call("/api/v1/subject/people", {
          person: { document_number: "52998224725", document_type: "cpf", social_name: "Ana", fiscal_country: "BRA" },
        });
        await call(`/api/sandbox/subjects/${person.data.id}/approve`);
        await eventually("the receiver got it", () => rx.at("/console").length === 1);
        assert.equal(rx.at("/console")[0].body.type, "subject_approved");
        await eventually("the log shows it succeeded", async () => {
          await filter(page);
          const listed = await rows(page, "delivery-rows");
          return listed.length === 1 && listed[0][1] === "subject_approved" && listed[0][2] === "succeeded";
        });
      });

      await t.step("a failing receiver: the page shows the attempt, its status and the receiver's answer", async () => {
        failing = true;
        await click(page, "#endpoint-rows", "Send test event");
        await eventually("the failed attempt", () => rx.at("/console").length === 2);
        await eventually("listed as pending with an attempt", async () => {
          await page.select("#filter-status", "pending");
          await filter(page);
          const listed = await rows(page, "delivery-rows");
          if (listed.length !== 1) return false;
          await page.click("#delivery-rows tr button");
          await page.waitForFunction(() => !document.getElementById("delivery")!.hidden);
          return (await rows(page, "attempt-rows")).length === 1;
        });
        const [[number, , status, , response]] = await rows(page, "attempt-rows");
        assert.deepEqual([number, status], ["1", "500"]);
        assert.match(response, /receiver down for maintenance/);
        assert.match(response, /x-request-id: rx-42/);
        await assertAccessible(page, "the console, light, a delivery open");
        await page.emulateMediaFeatures([{ name: "prefers-color-scheme", value: "dark" }]);
        await assertAccessible(page, "the console, dark, a delivery open");
        await page.emulateMediaFeatures([{ name: "prefers-color-scheme", value: "light" }]);
        await screenshot(page, "delivery", "#delivery-rows-table");
        // being retried, it needs attention: not "Nothing needs attention"
        await click(page, "#attention", "Refresh");
        await page.waitForFunction(() => document.getElementById("attention-list")!.textContent!.includes("retrying"), {
          timeout: 5_000,
        });
        assert.match(
          await page.$eval("#attention-list", (el) => el.textContent!),
          /1 retrying after a failed attempt \(HTTP 500\), next attempt \d\d:\d\d UTC/,
        );
        assert.equal(await page.$eval("#attention-empty", (el) => (el as HTMLElement).hidden), true);
      });

      await t.step(
        "the record's attempt count, next attempt and last error are shown in the log and the delivery",
        async () => {
          const [record] = await ctx.sql<{ next_attempt_at: Date }[]>`
          select next_attempt_at from webhook_deliveries where company_id = ${companyId} and status = 'pending'`;
          const hhmm = `${record.next_attempt_at.toISOString().slice(11, 16)} UTC`;
          await click(page, "#attention", "Refresh");
          await page.waitForFunction(
            (hhmm) => document.querySelector("#delivery-facts")!.textContent!.includes(hhmm),
            { timeout: 5_000 },
            hhmm,
          );
          const facts = await page.$eval("#delivery-facts", (dl) => dl.textContent!);
          assert.match(facts, /Attempts1/);
          assert.match(facts, /Last errorHTTP 500/);
          assert.match(facts, new RegExp(`Next attempt${hhmm} \\(in (9|10) min\\)`));
          const [listed] = await rows(page, "delivery-rows");
          assert.match(listed[4], new RegExp(`^1 attempt, next ${hhmm} \\(in (9|10) min\\)HTTP 500$`));
          const shown = await page.$eval("#delivery-rows-table th.extra", (th) => getComputedStyle(th).display);
          assert.notEqual(shown, "none");
          // the endpoint's counts come from requests of their own: wait for those made after the attempt was recorded
          await page.waitForFunction(
            (hhmm) => document.querySelector("#endpoint-rows")!.textContent!.includes(`next attempt ${hhmm}`),
            { timeout: 5_000 },
            hhmm,
          );
          const [endpoint] = await rows(page, "endpoint-rows");
          assert.match(endpoint[3], new RegExp(`^1 pending, 1 retrying.*next attempt ${hhmm}`));
          // its last 24 hours, from its stats read in the same refresh: the sandbox event's attempt, the failed one
          assert.match(
            endpoint[4],
            /^50% of 2 attempts succeededp50 \d+ ms, p95 \d+ mslast failure \d{4}-\d\d-\d\d [\d:]{8} UTC: HTTP 500$/,
          );
        },
      );

      await t.step("retried from the page once the receiver is back, it succeeds", async () => {
        failing = false;
        await click(page, "#delivery", "Retry now");
        await eventually("the retry arrived", () => rx.at("/console").length === 3);
        await eventually(
          "the delivery shows succeeded, with both attempts",
          async () => {
            // the log is drawn again as its deliveries change: a row replaced while it is clicked is clicked next time
            const clicked = await page.click("#delivery-rows tr button").then(() => true, () => false);
            if (!clicked) return false;
            const status = await page.$eval("#delivery-facts", (el) => (el as HTMLElement).dataset.status);
            return status === "succeeded" && (await rows(page, "attempt-rows")).length === 2;
            // a click every half second: on a loaded machine a panel asked again every 50 ms is drawn anew before it
            // shows what the last answer said (CI, 2026-12-07)
          },
          20_000,
          500,
        );
      });

      await t.step("rotated from the page, the new secret is shown once in place of the old", async () => {
        const before = await page.$eval("#endpoint-secret", (el) => el.textContent!);
        await click(page, "#endpoint-rows", "Rotate secret");
        await page.waitForFunction((before) => document.getElementById("endpoint-secret")!.textContent !== before, {
          timeout: 5_000,
        }, before);
        assert.match(await page.$eval("#endpoint-secret", (el) => el.textContent!), /shown once.*: [0-9a-f]{64}$/);
      });

      await t.step("disabled, enabled and recovered from the page: what failed and what it missed arrive", async () => {
        failing = true;
        await click(page, "#endpoint-rows", "Send test event");
        await eventually("the failed attempt", () => rx.at("/console").length === 4);
        await click(page, "#endpoint-rows", "Disable");
        await eventually("listed as disabled", async () => (await rows(page, "endpoint-rows"))[0]?.[2] === "disabled");
        // an event while it is disabled: no record for it, until a recover sends what it missed
        const missed = crypto.randomUUID();
        await ctx.sql.begin((tx) => emitEvent(tx, companyId, "identified", { transaction_id: missed }));
        failing = false;
        await click(page, "#endpoint-rows", "Enable");
        await eventually("listed as active", async () => (await rows(page, "endpoint-rows"))[0]?.[2] === "active");
        await view(page, "#overview");
        await screenshot(page, "endpoints", "body");
        // counted up front, on the endpoint's row and in what needs attention, which shows it in the log
        assert.match((await rows(page, "endpoint-rows"))[0][3], /^1 failed/);
        assert.match(await page.$eval("#attention-list", (el) => el.textContent!), /1 failed delivery/);
        await click(page, "#attention", "Show in log");
        await eventually("the failed delivery in the log", async () => {
          const listed = await rows(page, "delivery-rows");
          return listed.length === 1 && listed[0][2] === "failed";
        });
        const anHourAgo = new Date(Date.now() - 3600_000).toISOString().slice(0, 16);
        await page.$eval("#recover-since", (el, v) => (el as HTMLInputElement).value = v, anHourAgo);
        await page.select("#recover-skipped", "true");
        await click(page, "#recover-form", "Recover");
        await eventually("the failed delivery sent again, and the missed event", () => rx.at("/console").length === 6);
        assert.equal(rx.at("/console").filter((a) => a.body.data?.transaction_id === missed).length, 1);
        await eventually("and listed as succeeded", async () => {
          await page.select("#filter-status", "failed");
          await filter(page);
          return (await rows(page, "delivery-rows")).length === 0;
        });
        await eventually("nothing needs attention any more", async () => {
          await click(page, "#attention", "Refresh");
          return await page.$eval("#attention-empty", (el) => !(el as HTMLElement).hidden);
        });
      });

      await t.step("a filter set in the endpoint's form shows under its URL; emptied, it goes", async () => {
        const cel = 'event_type == "identified"';
        await click(page, "#endpoint-rows", "Edit");
        await page.type("#endpoint-filter", cel);
        await click(page, "#endpoint-form", "Save endpoint");
        const url = async () => (await rows(page, "endpoint-rows"))[0]?.[0];
        await eventually("the filter under the URL", async () => await url() === `${rx.url}/consolefilter ${cel}`);
        await click(page, "#endpoint-rows", "Edit");
        assert.equal(await page.$eval("#endpoint-filter", (el) => (el as HTMLInputElement).value), cel);
        await page.$eval("#endpoint-filter", (el) => (el as HTMLInputElement).value = "");
        await click(page, "#endpoint-form", "Save endpoint");
        await eventually("the URL alone again", async () => await url() === `${rx.url}/console`);
      });

      await t.step("a rate limit set in the endpoint's form shows under its URL; emptied, it goes", async () => {
        const rateOf = async () =>
          (await ctx.sql<{ rate_limit: number | null }[]>`
            select rate_limit from webhook_endpoints where company_id = ${companyId} and url = ${`${rx.url}/console`}`)[
            0
          ]
            .rate_limit;
        const url = async () => (await rows(page, "endpoint-rows"))[0]?.[0];
        await click(page, "#endpoint-rows", "Edit");
        await page.type("#endpoint-rate", "2.5");
        await click(page, "#endpoint-form", "Save endpoint");
        await eventually("the rate under the URL", async () => await url() === `${rx.url}/consolethrottle 2.5/s`);
        assert.equal(await rateOf(), 2.5);
        await click(page, "#endpoint-rows", "Edit");
        assert.equal(await page.$eval("#endpoint-rate", (el) => (el as HTMLInputElement).value), "2.5");
        await page.$eval("#endpoint-rate", (el) => (el as HTMLInputElement).value = "");
        await click(page, "#endpoint-form", "Save endpoint");
        await eventually("the URL alone again", async () => await url() === `${rx.url}/console`);
        assert.equal(await rateOf(), null);
      });

      await t.step("custom headers set in the form show in the row, the secret masked and kept", async () => {
        const setText = (id: string, value: string) =>
          page.$eval(id, (el, value) => (el as HTMLTextAreaElement).value = value, value);
        const settings = async () => (await rows(page, "endpoint-rows"))[0]?.[1] ?? "";
        const noticeText = () => page.$eval("#notice", (el) => el.textContent ?? "");
        const stored = async () => {
          const [row] = await ctx.sql<{ sealed_custom_headers: Record<string, string> }[]>`
            select sealed_custom_headers from webhook_endpoints where company_id = ${companyId}`;
          return row.sealed_custom_headers["X-Api-Key"];
        };
        await click(page, "#endpoint-rows", "Edit");
        await setText("#endpoint-headers", "X-Tenant: acme");
        await setText("#endpoint-secret-headers", "X-Api-Key: k_live_0123456789abcdef");
        await click(page, "#endpoint-form", "Save endpoint");
        await eventually(
          "the headers in the row, the secret masked",
          async () => (await settings()).endsWith("headers: X-Tenant: acme, X-Api-Key: ****cdef"),
        );
        const sealed = await stored();
        assert.match(sealed, /^enc:v1:/);
        // edited again, the secret reads masked; saved as it is, the stored value stays
        await click(page, "#endpoint-rows", "Edit");
        assert.equal(
          await page.$eval("#endpoint-headers", (el) => (el as HTMLTextAreaElement).value),
          "X-Tenant: acme",
        );
        assert.equal(
          await page.$eval("#endpoint-secret-headers", (el) => (el as HTMLTextAreaElement).value),
          "X-Api-Key: ****cdef",
        );
        await page.$eval("#notice", (el) => el.textContent = "");
        await click(page, "#endpoint-form", "Save endpoint");
        await eventually("saved", async () => await noticeText() === "Endpoint saved");
        assert.equal(await stored(), sealed);
        // a name the service sets: the page names the header
        await click(page, "#endpoint-rows", "Edit");
        await setText("#endpoint-headers", "X-Tenant: acme\nHost: elsewhere");
        await click(page, "#endpoint-form", "Save endpoint");
        await eventually("the refusal", async () => (await noticeText()).startsWith("headers.Host cannot be set"));
        // emptied, they go
        await setText("#endpoint-headers", "");
        await setText("#endpoint-secret-headers", "");
        await click(page, "#endpoint-form", "Save endpoint");
        await eventually("no headers in the row", async () => !(await settings()).includes("headers:"));
        assert.equal(await stored(), undefined);
      });

      await t.step("a client certificate pasted in the form is saved, its key sealed; the box removes it", async () => {
        const pem = (name: string) => Deno.readTextFileSync(new URL(`../fixtures/tls/${name}`, import.meta.url));
        const stored = async () =>
          (await ctx.sql<{ client_certificate: string | null; sealed_client_key: string | null }[]>`
            select client_certificate, sealed_client_key from webhook_endpoints
            where company_id = ${companyId} and url = ${`${rx.url}/console`}`)[0];
        await click(page, "#endpoint-rows", "Edit");
        await page.$eval("#endpoint-client-cert", (el, v) => (el as HTMLTextAreaElement).value = v, pem("client.pem"));
        await page.$eval("#endpoint-client-key", (el, v) => (el as HTMLTextAreaElement).value = v, pem("client.key"));
        await click(page, "#endpoint-form", "Save endpoint");
        const saved = await eventually("the certificate stored", async () => (await stored()).client_certificate);
        assert.equal(saved, pem("client.pem").trim());
        assert.match((await stored()).sealed_client_key ?? "", /^enc:v1:/);
        await click(page, "#endpoint-rows", "Edit");
        assert.equal(await page.$eval("#endpoint-client-key", (el) => (el as HTMLTextAreaElement).value), "");
        await page.click("#endpoint-client-remove");
        await click(page, "#endpoint-form", "Save endpoint");
        await eventually("the certificate removed", async () => (await stored()).sealed_client_key === null);
      });

      await t.step(
        "OAuth2 credentials set in the form are saved sealed, shown without the secret, removed",
        async () => {
          const secret = "console-oauth2-secret";
          await click(page, "#endpoint-rows", "Edit");
          await page.type("#endpoint-oauth2-url", `${rx.url}/token`);
          await page.type("#endpoint-oauth2-client", "console-client");
          await page.type("#endpoint-oauth2-secret", secret);
          await click(page, "#endpoint-form", "Save endpoint");
          const stored = async () =>
            (await ctx.sql<{ oauth2: { client_id: string; sealed_client_secret: string } | null }[]>`
            select oauth2 from webhook_endpoints where company_id = ${companyId} and url = ${`${rx.url}/console`}`)[0]
              ?.oauth2;
          const settings = async () => (await rows(page, "endpoint-rows"))[0]?.[1] ?? "";
          await eventually("OAuth2 in the endpoint's settings", async () => (await settings()).includes("OAuth2"));
          const saved = await eventually("the credentials stored", stored);
          assert.equal(saved.client_id, "console-client");
          assert.ok(saved.sealed_client_secret.startsWith("enc:v1:"));
          await click(page, "#endpoint-rows", "Edit");
          assert.equal(
            await page.$eval("#endpoint-oauth2-url", (el) => (el as HTMLInputElement).value),
            `${rx.url}/token`,
          );
          assert.equal(await page.$eval("#endpoint-oauth2-secret", (el) => (el as HTMLInputElement).value), "");
          assert.ok(!(await page.content()).includes(secret), "the secret is never on the page again");
          await page.$eval("#endpoint-oauth2-url", (el) => (el as HTMLInputElement).value = "");
          await click(page, "#endpoint-form", "Save endpoint");
          await eventually("the credentials removed", async () => await stored() === null);
          await eventually("no OAuth2 in the settings", async () => !(await settings()).includes("OAuth2"));
        },
      );

      await t.step(
        "a payload version chosen in the endpoint's form is the endpoint's, and shown when edited",
        async () => {
          const stored = async () =>
            (await ctx.sql<{ payload_version: string | null }[]>`
            select payload_version from webhook_endpoints
            where company_id = ${companyId} and url = ${`${rx.url}/console`}`)[0].payload_version;
          assert.equal(await stored(), "2026-11-23", "created on the page: the form's choice, the first by default");
          await click(page, "#endpoint-rows", "Edit");
          assert.equal(await page.$eval("#endpoint-version", (el) => (el as HTMLSelectElement).value), "2026-11-23");
          await page.select("#endpoint-version", "2026-11-27");
          await click(page, "#endpoint-form", "Save endpoint");
          await eventually("pinned to the latest", async () => await stored() === "2026-11-27");
          // the list is read again after a save: Edit shows the saved version once it is
          await eventually("the form shows the latest", async () => {
            await click(page, "#endpoint-rows", "Edit");
            return await page.$eval("#endpoint-version", (el) => (el as HTMLSelectElement).value) === "2026-11-27";
          });
          await page.select("#endpoint-version", "2026-11-23");
          await click(page, "#endpoint-form", "Save endpoint");
          await eventually("pinned to the first", async () => await stored() === "2026-11-23");
          // the next step creates an endpoint: wait for the form to be reset after this save
          await page.waitForFunction(() => !(document.getElementById("endpoint-id") as HTMLInputElement).value);
        },
      );

      await t.step(
        "an ed25519 endpoint chosen in the form shows its public key, the one the API publishes",
        async () => {
          await page.type("#endpoint-url", `${rx.url}/console-ed25519`);
          await page.select("#endpoint-scheme", "ed25519");
          await click(page, "#endpoint-form", "Create endpoint");
          await page.waitForFunction(() => document.querySelectorAll("#endpoint-rows tr").length === 2);
          const shown = await page.$eval("#endpoint-secret", (el) => el.textContent!);
          const key = /Public key .*: (whpk_\S+)$/.exec(shown)?.[1];
          assert.ok(key, shown);
          const listed = await ctx.sql<{ public_key: string; signature_scheme: string }[]>`
          select public_key, signature_scheme from webhook_endpoints
          where company_id = ${companyId} and url = ${`${rx.url}/console-ed25519`}`;
          assert.deepEqual([...listed], [{ public_key: key, signature_scheme: "ed25519" }]);
          assert.equal(await page.$eval("#endpoint-scheme", (el) => (el as HTMLSelectElement).value), "hmac-sha256");
        },
      );

      await t.step("readable at 360 px wide, and nothing was asked of another host", async () => {
        await page.setViewport({ width: 360, height: 740 });
        const overflow = await page.evaluate(() => document.documentElement.scrollWidth - globalThis.innerWidth);
        assert.ok(overflow <= 0, `${overflow} px wider than the screen`);
        await assertAccessible(page, "the console at 360 px");
        await page.emulateMediaFeatures([{ name: "prefers-color-scheme", value: "dark" }]);
        await assertAccessible(page, "the console at 360 px, dark");
        assert.deepEqual(await fontDependentMarks(page), []);
        assert.deepEqual(elsewhere, []);
        assert.deepEqual(violations, []);
        assert.deepEqual(pageErrors, []);
      });

      await t.step("Sign out ends the session: the token the tab held answers 401 from then on", async () => {
        const token = await page.evaluate(() => sessionStorage.getItem("payments-console-token"));
        assert.ok(token);
        const bearer = { authorization: `Bearer ${token}` };
        assert.equal((await ctx.app.request("/api/v1/subject/people", { headers: bearer })).status, 200);
        const signedOut = page.waitForResponse((res) => res.url() === `${base}/api/v1/sign_out`, { timeout: 5_000 });
        await page.$eval("#sign-out", (b) => (b as HTMLButtonElement).click());
        assert.equal((await signedOut).status(), 204);
        await page.waitForFunction(() => !document.getElementById("sign-in")!.hidden, { timeout: 5_000 });
        assert.equal(await page.$eval("#sign-in-error", (el) => el.textContent), "");
        assert.deepEqual(await page.evaluate(() => [sessionStorage.length, localStorage.length]), [0, 0]);
        const res = await ctx.app.request("/api/v1/subject/people", { headers: bearer });
        assert.deepEqual([res.status, await res.json()], [401, { errors: { detail: "Unauthorized" } }]);
      });

      await t.step("/docs keeps no token: none is stored, and one an earlier version stored is removed", async () => {
        // the first load's fetch of /openapi.json done before the reload, which would abort it (a failed request)
        await page.goto(`${base}/docs`, { waitUntil: "networkidle0" });
        await page.evaluate(() => localStorage.setItem("authorized", '{"bearerAuth":{"value":"an old token"}}'));
        await page.reload();
        await page.waitForFunction(() => document.querySelector("#docs .swagger-ui"), { timeout: 10_000 });
        assert.deepEqual(await page.evaluate(() => Object.keys(localStorage)), []);
        assert.deepEqual(pageErrors, []);
      });
    } finally {
      await browser.close();
      await server.shutdown();
      await rx.close();
      await ctx.close();
    }
  },
});
