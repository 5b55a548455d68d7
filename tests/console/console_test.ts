/// <reference lib="dom" />
// The functions handed to page.evaluate run in the browser: they are typed against the DOM.
import assert from "node:assert/strict";
import puppeteer, { type Page } from "puppeteer-core";
import { createUser } from "../../domain/integrators/users.ts";
import { freePort } from "../support/free_port.ts";
import { signToken } from "../../domain/integrators/tokens.ts";
import { eventually, setup, TEST_TOKENS } from "../support/helpers.ts";
import { startReceiver } from "../support/webhook_receiver.ts";

/** Debian's chromium; CHROMIUM_PATH for another. The browser tests run wherever one is installed (.ci/run installs it). */
const CHROMIUM = Deno.env.get("CHROMIUM_PATH") ?? "/usr/bin/chromium";
const haveChromium = await Deno.stat(CHROMIUM).then(() => true, () => false);
/** CONSOLE_SCREENSHOTS=1 writes the README's screenshots into docs/. */
const SCREENSHOTS = Deno.env.get("CONSOLE_SCREENSHOTS") === "1";
const docs = new URL("../../docs/", import.meta.url).pathname;

/** The rows of a table body as arrays of cell texts. */
function rows(page: Page, tbody: string): Promise<string[][]> {
  return page.$$eval(`#${tbody} tr`, (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent ?? "")));
}

/** Clicks a button by its exact text inside `scope`. */
async function click(page: Page, scope: string, label: string) {
  const clicked = await page.$$eval(`${scope} button`, (buttons, label) => {
    const b = buttons.find((b) => b.textContent === label) as HTMLButtonElement | undefined;
    b?.click();
    return Boolean(b);
  }, label);
  assert.ok(clicked, `a "${label}" button in ${scope}`);
}

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
    const browser = await puppeteer.launch({
      executablePath: CHROMIUM,
      args: ["--no-sandbox", "--headless=new", "--disable-gpu"],
    });
    const page = await browser.newPage();
    await page.setViewport({ width: 1100, height: 900 });
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
      });

      await t.step("an endpoint created on the page shows its secret once and lists", async () => {
        await page.type("#endpoint-url", `${rx.url}/console`);
        await click(page, "#endpoint-form", "Create endpoint");
        await page.waitForFunction(() => document.querySelectorAll("#endpoint-rows tr").length === 1);
        const [[url, mode, status]] = await rows(page, "endpoint-rows");
        assert.deepEqual([url, mode, status], [`${rx.url}/console`, "parallel", "active"]);
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
          await click(page, "#filters", "Filter");
          const listed = await rows(page, "delivery-rows");
          return listed.length === 1 && listed[0][1] === "subject_approved" && listed[0][2] === "succeeded";
        });
        if (SCREENSHOTS) await page.screenshot({ path: `${docs}console-endpoints.png`, fullPage: false });
      });

      await t.step("a failing receiver: the page shows the attempt, its status and the receiver's answer", async () => {
        failing = true;
        await click(page, "#endpoint-rows", "Send test event");
        await eventually("the failed attempt", () => rx.at("/console").length === 2);
        await eventually("listed as pending with an attempt", async () => {
          await page.select("#filter-status", "pending");
          await click(page, "#filters", "Filter");
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
        if (SCREENSHOTS) {
          await page.$eval("#delivery", (el) => el.scrollIntoView());
          await page.screenshot({ path: `${docs}console-delivery.png`, fullPage: false });
        }
      });

      await t.step("retried from the page once the receiver is back, it succeeds", async () => {
        failing = false;
        await click(page, "#delivery", "Retry now");
        await eventually("the retry arrived", () => rx.at("/console").length === 3);
        await eventually("the delivery shows succeeded, with both attempts", async () => {
          await page.click("#delivery-rows tr button");
          const status = await page.$eval("#delivery-facts", (el) => (el as HTMLElement).dataset.status);
          return status === "succeeded" && (await rows(page, "attempt-rows")).length === 2;
        });
      });

      await t.step("rotated from the page, the new secret is shown once in place of the old", async () => {
        const before = await page.$eval("#endpoint-secret", (el) => el.textContent!);
        await click(page, "#endpoint-rows", "Rotate secret");
        await page.waitForFunction((before) => document.getElementById("endpoint-secret")!.textContent !== before, {
          timeout: 5_000,
        }, before);
        assert.match(await page.$eval("#endpoint-secret", (el) => el.textContent!), /shown once.*: [0-9a-f]{64}$/);
      });

      await t.step("disabled, enabled and recovered from the page: what failed meanwhile arrives", async () => {
        failing = true;
        await click(page, "#endpoint-rows", "Send test event");
        await eventually("the failed attempt", () => rx.at("/console").length === 4);
        await click(page, "#endpoint-rows", "Disable");
        await eventually("listed as disabled", async () => (await rows(page, "endpoint-rows"))[0]?.[2] === "disabled");
        failing = false;
        await click(page, "#endpoint-rows", "Enable");
        await eventually("listed as active", async () => (await rows(page, "endpoint-rows"))[0]?.[2] === "active");
        const anHourAgo = new Date(Date.now() - 3600_000).toISOString().slice(0, 16);
        await page.$eval("#recover-since", (el, v) => (el as HTMLInputElement).value = v, anHourAgo);
        await click(page, "#recover-form", "Recover");
        await eventually("the failed delivery sent again", () => rx.at("/console").length === 5);
        await eventually("and listed as succeeded", async () => {
          await page.select("#filter-status", "failed");
          await click(page, "#filters", "Filter");
          return (await rows(page, "delivery-rows")).length === 0;
        });
      });

      await t.step("readable at 360 px wide, and nothing was asked of another host", async () => {
        await page.setViewport({ width: 360, height: 740 });
        const overflow = await page.evaluate(() => document.documentElement.scrollWidth - globalThis.innerWidth);
        assert.ok(overflow <= 0, `${overflow} px wider than the screen`);
        assert.deepEqual(elsewhere, []);
        assert.deepEqual(violations, []);
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
