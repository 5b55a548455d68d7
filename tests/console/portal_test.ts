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
import { assertAccessible } from "../support/console_page.ts";
import { operatorWordsIn, PNG_BASE64 } from "../support/portal_branding.ts";

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

/**
 * The platform's own pages on loopback, each framing the portal link its `frame` query names (a server of its own:
 * 127.0.0.1 on its port is the origin the links name).
 */
function platformPages(title: string, frameSize = "") {
  const port = freePort();
  const server = Deno.serve({ hostname: "127.0.0.1", port, onListen: () => {} }, (req) => {
    const src = new URL(req.url).searchParams.get("frame") ?? "";
    const html = `<!doctype html><title>${title}</title><h1>Your webhooks</h1>` +
      `<iframe id="portal" src="${src}"${frameSize}></iframe>`;
    return new Response(html, { headers: { "content-type": "text/html; charset=utf-8" } });
  });
  return { server, port, origin: `http://127.0.0.1:${port}` };
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
    const { server: platform, port: platformPort, origin: platformOrigin } = platformPages("Platform");
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

Deno.test({
  name: "a branded portal link in a browser: the platform's name, colour and logo, none of the operator's words",
  ignore: !haveChromium,
  fn: async (t) => {
    const ctx = await setup("console_portal_branding");
    const port = freePort();
    const server = Deno.serve({ hostname: "127.0.0.1", port, onListen: () => {} }, ctx.app.fetch);
    const base = `http://127.0.0.1:${port}`;
    const { server: platform, origin: platformOrigin } = platformPages("Acme", ' width="1200" height="800"');
    const company = await newCompany(ctx);
    const ownUrl = "https://customer.example/hooks";
    assert.equal((await company.post("/api/v2/notifications/endpoints", { url: ownUrl })).status, 201);
    const accent = "#0a7d4f";
    const newLink = async () => {
      const made = await company.post(LINKS, {
        allowed_origins: [platformOrigin],
        branding: {
          name: "Acme Pay",
          accent_color: accent,
          support_url: "https://acme.example/support",
          logo: { file_type: "image/png", file_data: PNG_BASE64 },
        },
      });
      assert.equal(made.status, 201, JSON.stringify(made.body));
      const url = new URL(made.body.data.url);
      return { id: made.body.data.id as string, url: `${base}${url.pathname}${url.hash}` };
    };
    /** What the portal shows a reader, every view and panel included (hidden or not), and its title. */
    const wholeText = (where: Page | Frame) =>
      where.evaluate(() => `${document.title}\n${document.body.textContent}\n${document.body.innerText}`);

    const browser = await puppeteer.launch({
      executablePath: CHROMIUM,
      args: ["--no-sandbox", "--headless=new", "--disable-gpu"],
    });
    const pageErrors: string[] = [];
    try {
      await t.step(
        "framed by its origin, it wears the platform's name, colour and logo, from the service",
        async () => {
          const link = await newLink();
          const host = await browser.newPage();
          host.on("pageerror", (err) => pageErrors.push(String(err)));
          await host.goto(`${platformOrigin}/?frame=${encodeURIComponent(link.url)}`);
          const frame = await eventually(
            "the portal's frame",
            () => host.frames().find((f) => f.url().startsWith(`${base}/console/portal/`)),
          );
          await shows(frame, ownUrl);
          const look = await frame.evaluate(() => {
            const logo = document.querySelector(".brand img") as HTMLImageElement;
            const primary = document.querySelector("button.primary") as HTMLElement;
            return {
              title: document.title,
              heading: document.querySelector("h1")!.textContent,
              logo: { src: logo.src, loaded: logo.complete && logo.naturalWidth > 0 },
              brand: getComputedStyle(document.documentElement).getPropertyValue("--brand").trim(),
              button: getComputedStyle(primary).backgroundColor,
              close: document.getElementById("sign-out")!.textContent,
              support: (document.querySelector('#app-nav a[href^="https://acme"]') as HTMLAnchorElement)?.href,
            };
          });
          assert.deepEqual(look, {
            title: "Acme Pay",
            heading: "Acme Pay",
            logo: { src: `${base}/console/portal/${link.id}/logo`, loaded: true },
            brand: accent,
            button: "rgb(10, 125, 79)",
            close: "Close",
            support: "https://acme.example/support",
          });
          const logo = await fetch(look.logo.src);
          assert.equal(logo.status, 200);
          assert.equal(logo.headers.get("content-type"), "image/png");
          await logo.body?.cancel();
          assert.deepEqual(operatorWordsIn(await wholeText(frame)), []);
          assert.deepEqual(pageErrors, []);
          await host.close();
        },
      );

      const link = await newLink();
      const page = await browser.newPage();
      page.on("pageerror", (err) => pageErrors.push(String(err)));
      await page.setViewport({ width: 1280, height: 900 });
      await page.goto(link.url);
      await shows(page, ownUrl);

      await t.step("its catalogue reads as formatted text, without the operator's settings", async () => {
        await page.evaluate(() => location.hash = "#catalogue");
        await page.waitForFunction(() => !document.getElementById("view-catalogue")!.hidden);
        const catalogue = await page.$eval("#catalogue", (c) => ({
          text: (c as HTMLElement).innerText,
          codes: [...c.querySelectorAll("summary span code")].map((code) => code.textContent),
        }));
        assert.ok(!catalogue.text.includes("`"), "no markdown backticks");
        assert.ok(catalogue.codes.includes("manual") && catalogue.codes.includes("*"), "code spans as <code>");
        assert.deepEqual(operatorWordsIn(catalogue.text), []);
        assert.match(catalogue.text, /has failed 10 attempts in a row, or every attempt for 1 hour/);
        assert.deepEqual(operatorWordsIn(await wholeText(page)), []);
      });

      await t.step("event types are ticked from the catalogue, and shown ticked when edited", async () => {
        await page.evaluate(() => location.hash = "#overview");
        await page.waitForFunction(() => !document.getElementById("view-overview")!.hidden);
        await page.evaluate(() => (document.getElementById("endpoint-form-panel") as HTMLDetailsElement).open = true);
        const offered = await page.$$eval(
          "input.event-type",
          (boxes) => boxes.map((b) => (b as HTMLInputElement).value),
        );
        const catalogue = (await company.get("/api/v2/notifications/event_types")).body.data.map(
          (e: { type: string }) => e.type,
        );
        assert.deepEqual(offered, catalogue, "one box per type of GET event_types");
        await page.type("#endpoint-url", "https://customer.example/picked");
        for (const type of ["identified", "non_identified_bank_transaction"]) {
          await page.click(`input.event-type[value="${type}"]`);
        }
        assert.equal(await page.$eval("#endpoint-events", (b) => (b as HTMLInputElement).checked), false, "* unticked");
        await page.click("#endpoint-save");
        await shows(page, "https://customer.example/picked");
        const saved = (await company.get("/api/v2/notifications/endpoints")).body.data.find(
          (e: { url: string }) => e.url === "https://customer.example/picked",
        );
        assert.deepEqual(saved.enabled_events, ["identified", "non_identified_bank_transaction"]);
        // the form is empty again: every type, as a new endpoint starts
        assert.equal(await page.$eval("#endpoint-events", (b) => (b as HTMLInputElement).checked), true);
        const edited = await page.$$eval("#endpoint-rows tr", (trs) => {
          const row = trs.find((tr) => tr.textContent!.includes("https://customer.example/picked"));
          const edit = [...row!.querySelectorAll("button")].find((b) => b.textContent === "Edit");
          edit!.click();
          return Boolean(edit);
        });
        assert.ok(edited, "an Edit button on the endpoint's row");
        const ticked = await page.$$eval(
          "#endpoint-events-choice input:checked",
          (boxes) => boxes.map((b) => (b as HTMLInputElement).value),
        );
        assert.deepEqual(ticked, ["identified", "non_identified_bank_transaction"]);
        await page.click("#endpoint-cancel");
      });

      await t.step("axe-core finds nothing serious at 1280 and 360 px, light and dark", async () => {
        await page.evaluate(() => (document.getElementById("endpoint-form-panel") as HTMLDetailsElement).open = true);
        for (const scheme of ["light", "dark"] as const) {
          await page.emulateMediaFeatures([{ name: "prefers-color-scheme", value: scheme }]);
          for (const [width, height] of [[1280, 900], [360, 740]]) {
            await page.setViewport({ width, height });
            for (const hash of ["#overview", "#catalogue"]) {
              await page.evaluate((h) => location.hash = h, hash);
              await assertAccessible(page, `the branded portal's ${hash} at ${width} px, ${scheme}`);
              const wide = await page.evaluate(() => document.documentElement.scrollWidth - innerWidth);
              assert.ok(wide <= 0, `${hash} at ${width} px is ${wide} px wider than the window`);
            }
          }
        }
        await page.emulateMediaFeatures([{ name: "prefers-color-scheme", value: "light" }]);
      });

      await t.step("Close ends the portal session, and says so in the platform's words", async () => {
        const jwt = await page.evaluate(() => sessionStorage.getItem("payments-console-token"));
        await page.click("#sign-out");
        await shows(page, "This session has ended");
        const after = await ctx.app.request("/api/v2/notifications/endpoints", {
          headers: { authorization: `Bearer ${jwt}` },
        });
        assert.equal(after.status, 401, "the session is over on the server");
        await after.body?.cancel();
        assert.deepEqual(operatorWordsIn(await wholeText(page)), []);
        assert.deepEqual(pageErrors, []);
      });
    } finally {
      await browser.close();
      await server.shutdown();
      await platform.shutdown();
      await ctx.close();
    }
  },
});
