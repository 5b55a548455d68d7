/// <reference lib="dom" />
/**
 * What the console's browser tests share (tests/console/): the browser, reading and clicking the page, axe-core, the
 * screenshots of the README, and checks that no mark depends on the reader's fonts. Kept here so the two story files
 * do not copy them. The functions handed to page.evaluate run in the browser: they are typed against the DOM.
 */
import assert from "node:assert/strict";
import puppeteer, { type Browser, type Page } from "puppeteer-core";
import axe from "axe-core";
import { createUser } from "../../domain/integrators/users.ts";
import { signToken } from "../../domain/integrators/tokens.ts";
import { freePort } from "./free_port.ts";
import { TEST_TOKENS, type TestContext } from "./helpers.ts";

/** Debian's chromium; CHROMIUM_PATH for another. The browser tests run wherever one is installed (.ci/run installs it). */
export const CHROMIUM = Deno.env.get("CHROMIUM_PATH") ?? "/usr/bin/chromium";
export const haveChromium = await Deno.stat(CHROMIUM).then(() => true, () => false);
/** CONSOLE_SCREENSHOTS=1 writes the README's screenshots into docs/, each at 1280 and at 360 px wide. */
const SCREENSHOTS = Deno.env.get("CONSOLE_SCREENSHOTS") === "1";
const docs = new URL("../../docs/", import.meta.url).pathname;

export function launchBrowser(): Promise<Browser> {
  return puppeteer.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--headless=new", "--disable-gpu"] });
}

/** The rows of a table body as arrays of cell texts. */
export function rows(page: Page, tbody: string): Promise<string[][]> {
  return page.$$eval(`#${tbody} tr`, (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent ?? "")));
}

/** Clicks a button by its exact text inside `scope`. */
export async function click(page: Page, scope: string, label: string) {
  const clicked = await page.$$eval(`${scope} button`, (buttons, label) => {
    const b = buttons.find((b) => b.textContent === label) as HTMLButtonElement | undefined;
    b?.click();
    return Boolean(b);
  }, label);
  assert.ok(clicked, `a "${label}" button in ${scope}`);
}

/** Goes to a view of the console by its address's fragment (`#log`, `#endpoint/<id>`), as a link there does. */
export async function view(page: Page, hash: string) {
  await page.evaluate((hash) => location.hash = hash, hash);
  const name = hash.slice(1).split("/")[0];
  await page.waitForFunction((name) => !document.getElementById(`view-${name}`)!.hidden, { timeout: 5_000 }, name);
}

/** Filters the delivery log and waits for its answer: until then the rows are the previous filter's. */
export async function filter(page: Page) {
  await view(page, "#log");
  await click(page, "#filters", "Filter");
  await page.waitForFunction(() => !document.querySelector("#delivery-rows-table[aria-busy]"), { timeout: 5_000 });
}

/** Signs in on the sign-in form and waits for the console. */
export async function signIn(page: Page, username: string, password: string) {
  await page.type("#username", username);
  await page.type("#password", password);
  await page.keyboard.press("Enter");
  await page.waitForFunction(() => !document.getElementById("app")!.hidden, { timeout: 5_000 });
}

/**
 * axe-core run on the page as it is: its source is evaluated over the DevTools protocol, which the page's
 * Content-Security-Policy does not apply to (a <script> tag with it inline would be refused, and counted as a violation
 * below). Answers every violation as "impact rule: help (where)".
 */
async function accessibility(page: Page): Promise<{ impact: string; line: string }[]> {
  if (!await page.evaluate(() => "axe" in globalThis)) await page.evaluate(axe.source);
  const found = await page.evaluate(async () => {
    const { axe: engine } = globalThis as unknown as { axe: typeof axe };
    const { violations } = await engine.run(document, { resultTypes: ["violations"] });
    return violations.map((v) => ({
      impact: v.impact ?? "none",
      line: `${v.impact} ${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(" ")).join(", ")})`,
    }));
  });
  return found;
}

/** Fails on any serious or critical violation, naming each. */
export async function assertAccessible(page: Page, where: string) {
  const found = await accessibility(page);
  const blocking = found.filter((v) => v.impact === "serious" || v.impact === "critical").map((v) => v.line);
  assert.deepEqual(blocking, [], `axe-core on ${where}:\n${blocking.join("\n")}`);
}

/**
 * The characters of the page, its text and what its CSS writes before and after elements, that fonts may lack: the
 * blocks of arrows, technical signs (the pause sign), shapes, symbols and dingbats (U+2190 to U+2BFF), and emoji.
 * The console draws its marks with CSS boxes instead.
 */
export function fontDependentMarks(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const risky = /[\u2190-\u2BFF\u{1F000}-\u{1FAFF}]/u;
    const found = new Set<string>();
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      for (const ch of n.textContent ?? "") if (risky.test(ch)) found.add(`${ch} in "${n.textContent!.trim()}"`);
    }
    for (const e of document.querySelectorAll("body *")) {
      for (const pseudo of ["::before", "::after"]) {
        const content = getComputedStyle(e, pseudo).content;
        for (const ch of content) if (risky.test(ch)) found.add(`${ch} in ${e.className}${pseudo}`);
      }
    }
    return [...found];
  });
}

/**
 * The README's screenshot `name`, at a phone's width (`-360`) and then at a laptop's, where the rest of the test goes
 * on; `at` is scrolled into view first. Viewport pixels only (no device scale), so the files stay small.
 */
export async function screenshot(page: Page, name: string, at?: string) {
  if (!SCREENSHOTS) return;
  for (const [width, height, suffix] of [[360, 740, "-360"], [1280, 860, ""]] as const) {
    await page.setViewport({ width, height });
    if (at) await page.$eval(at, (el) => el.scrollIntoView());
    await page.screenshot({ path: `${docs}console-${name}${suffix}.png` });
  }
}

/** The text of an element. */
export const textOf = (page: Page, selector: string) => page.$eval(selector, (el) => el.textContent ?? "");

/** Searches an id from the bar on top and waits for the log to show what it found. */
export async function search(page: Page, id: string) {
  await page.$eval("#search-id", (el) => (el as HTMLInputElement).value = "");
  await page.type("#search-id", id);
  const before = await textOf(page, "#search-summary");
  await page.keyboard.press("Enter");
  await page.waitForFunction(
    (before) =>
      !document.getElementById("view-log")!.hidden &&
      document.getElementById("search-summary")!.textContent !== before &&
      !document.querySelector("#delivery-rows-table[aria-busy]"),
    { timeout: 5_000 },
    before,
  );
}

/** No view is wider than the screen, and axe-core finds nothing serious on it, in the light and the dark scheme. */
export async function assertReadable(page: Page, where: string) {
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - globalThis.innerWidth);
  assert.ok(overflow <= 0, `${where}: ${overflow} px wider than the screen`);
  await assertAccessible(page, where);
  await page.emulateMediaFeatures([{ name: "prefers-color-scheme", value: "dark" }]);
  await assertAccessible(page, `${where}, dark`);
  await page.emulateMediaFeatures([{ name: "prefers-color-scheme", value: "light" }]);
}

/**
 * The app of `ctx` served on a free loopback port (the browser's address), a company with a console user (its username
 * starting with `prefix`) and `call`, which calls the API as that company and answers the body's `data`, failing the
 * test on any answer but a 2xx.
 */
export async function servedConsole(ctx: TestContext, prefix: string) {
  const port = freePort();
  const server = Deno.serve({ hostname: "127.0.0.1", port, onListen: () => {} }, ctx.app.fetch);
  const companyId = crypto.randomUUID();
  const created = await createUser(ctx.sql, { companyId, username: `${prefix}-${companyId.slice(0, 8)}` });
  assert.ok("password" in created);
  const token = await signToken(TEST_TOKENS, companyId);
  // deno-lint-ignore no-explicit-any
  const call = async (method: string, path: string, body?: unknown): Promise<any> => {
    const res = await ctx.app.request(path, {
      method,
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = await res.json();
    assert.ok(res.ok, JSON.stringify(json));
    return json.data;
  };
  return {
    server,
    base: `http://127.0.0.1:${port}`,
    companyId,
    username: created.user.username,
    password: created.password,
    call,
  };
}
