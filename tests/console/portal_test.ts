/// <reference lib="dom" />
// The functions handed to page.evaluate run in the browser: they are typed against the DOM.
/**
 * A portal link in a real browser (docs/webhooks.md, "Portal links"): opened, it signs its customer in to the
 * company's endpoints with nothing of the code left in the address bar; opened again elsewhere, it says it no longer
 * opens; framed by the origin it names, it works, and framed by another, the browser refuses it before its script runs.
 * Apart from console_test.ts, the signed-in console's story, because here nobody signs in.
 */
import assert from "node:assert/strict";
import puppeteer, { type Frame, type Page } from "puppeteer-core";
import axe from "axe-core";
import { freePort } from "../support/free_port.ts";
import { eventually, newCompany, setup } from "../support/helpers.ts";

/** Debian's chromium; CHROMIUM_PATH for another. Run wherever one is installed (.ci/run installs it). */
const CHROMIUM = Deno.env.get("CHROMIUM_PATH") ?? "/usr/bin/chromium";
const haveChromium = await Deno.stat(CHROMIUM).then(() => true, () => false);

const LINKS = "/api/v2/notifications/portal_links";

/** Waits until the page (or frame) shows `text` somewhere, naming what it showed instead when it never does. */
async function shows(where: Page | Frame, text: string) {
  await where.waitForFunction((t) => document.body?.innerText.includes(t), { timeout: 10_000 }, text).catch(
    async (err) => {
      const shown = await where.evaluate(() => document.body?.innerText ?? "").catch(() => "");
      throw new Error(`${err.message}: "${text}" not shown; the page showed: ${shown.slice(0, 400)}`);
    },
  );
}

/** The serious and critical axe-core violations of the page as it is (its source evaluated over DevTools, not the CSP). */
async function seriousViolations(page: Page): Promise<string[]> {
  await page.evaluate(axe.source);
  return await page.evaluate(async () => {
    const { axe: engine } = globalThis as unknown as { axe: typeof axe };
    const { violations } = await engine.run(document, { resultTypes: ["violations"] });
    return violations.filter((v) => v.impact === "serious" || v.impact === "critical").map((v) => `${v.id}: ${v.help}`);
  });
}

Deno.test({
  name: "a portal link in a browser: opened once, framed only by the origin it names",
  ignore: !haveChromium,
  fn: async (t) => {
    const ctx = await setup("console_portal");
    const port = freePort();
    const server = Deno.serve({ hostname: "127.0.0.1", port, onListen: () => {} }, ctx.app.fetch);
    const base = `http://127.0.0.1:${port}`;
    // the platform's own pages, each framing the link its query names; on loopback, which development allows over
    // http: 127.0.0.1 is the origin the links name, localhost (the same server) an origin they do not
    const platformPort = freePort();
    const platform = Deno.serve({ hostname: "127.0.0.1", port: platformPort, onListen: () => {} }, (req) => {
      const src = new URL(req.url).searchParams.get("frame") ?? "";
      const html = `<!doctype html><title>Platform</title><h1>Your webhooks</h1><iframe id="portal" src="${src}">` +
        "</iframe>";
      return new Response(html, { headers: { "content-type": "text/html; charset=utf-8" } });
    });
    const platformOrigin = `http://127.0.0.1:${platformPort}`;
    const company = await newCompany(ctx);
    const other = await newCompany(ctx);
    const ownUrl = "https://customer.example/hooks";
    const otherUrl = "https://someone-else.example/hooks";
    assert.equal((await company.post("/api/v2/notifications/endpoints", { url: ownUrl })).status, 201);
    assert.equal((await other.post("/api/v2/notifications/endpoints", { url: otherUrl })).status, 201);
    /** A new link of the company, framable from the platform's 127.0.0.1 origin; its url made absolute to `base`. */
    const newLink = async () => {
      const made = await company.post(LINKS, { allowed_origins: [platformOrigin] });
      assert.equal(made.status, 201, JSON.stringify(made.body));
      const url = new URL(made.body.data.url);
      return { id: made.body.data.id as string, url: `${base}${url.pathname}${url.hash}` };
    };
    const statusOf = async (id: string) => (await company.get(`${LINKS}/${id}`)).body.data.status;

    const browser = await puppeteer.launch({
      executablePath: CHROMIUM,
      args: ["--no-sandbox", "--headless=new", "--disable-gpu"],
    });
    const pageErrors: string[] = [];
    try {
      const page = await browser.newPage();
      page.on("pageerror", (err) => pageErrors.push(String(err)));
      const link = await newLink();

      await t.step("opened, the link shows the company's endpoints, with the code gone from the address", async () => {
        await page.goto(link.url);
        await shows(page, ownUrl);
        assert.equal(page.url(), `${base}/console/portal/${link.id}`, "no code left in the address bar");
        assert.ok(!(await page.evaluate(() => document.body.innerText)).includes(otherUrl));
        // the sign-in's password (an endpoint's OAuth2 client secret is a password field of the endpoint form)
        const passwordShown = await page.evaluate(() => {
          const password = document.querySelector("input#password") as HTMLElement | null;
          return password !== null && password.offsetParent !== null;
        });
        assert.equal(passwordShown, false, "no password asked");
        const stored = await page.evaluate(() => ({ local: localStorage.length, session: sessionStorage.length }));
        assert.deepEqual(stored, { local: 0, session: 1 }, "the token in the tab's sessionStorage only");
        assert.equal(await statusOf(link.id), "used");
        assert.deepEqual(pageErrors, []);
      });

      await t.step("reloaded, the tab keeps its session", async () => {
        await page.reload();
        await shows(page, ownUrl);
      });

      await t.step("opened again in another tab, the used link says it no longer opens", async () => {
        const again = await browser.newPage();
        await again.goto(link.url);
        await shows(again, "This link no longer opens");
        assert.ok(!(await again.evaluate(() => document.body.innerText)).includes(ownUrl));
        assert.deepEqual(await seriousViolations(again), []);
        await again.close();
      });

      await t.step("framed by the origin the link names, it opens in the frame", async () => {
        const framed = await newLink();
        const host = await browser.newPage();
        await host.goto(`${platformOrigin}/?frame=${encodeURIComponent(framed.url)}`);
        const frame = await eventually(
          "the portal's frame",
          () => host.frames().find((f) => f.url().startsWith(`${base}/console/portal/`)),
        );
        await shows(frame, ownUrl);
        assert.equal(await statusOf(framed.id), "used");
        await host.close();
      });

      await t.step("framed by another origin, the browser refuses the page: its code is never exchanged", async () => {
        const refused = await newLink();
        const host = await browser.newPage();
        const blocked: string[] = [];
        host.on("console", (m) => m.text().includes("frame-ancestors") && blocked.push(m.text()));
        await host.goto(`http://localhost:${platformPort}/?frame=${encodeURIComponent(refused.url)}`);
        await eventually("the browser to say why it refused the frame", () => blocked.length > 0, 5_000);
        assert.match(blocked[0], new RegExp(`frame-ancestors ${platformOrigin.replace(/[.:/]/g, "\\$&")}`));
        assert.equal(await statusOf(refused.id), "active", "the page's script never ran");
        await host.close();
      });
    } finally {
      await browser.close();
      await server.shutdown();
      await platform.shutdown();
      await ctx.close();
    }
  },
});
