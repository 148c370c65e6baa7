/**
 * The console in a real browser: Debian's chromium driven by playwright-core, against the shipped
 * demo. Sign in with the link `up` prints, see the held-back upgrade of nbp-fx, approve it with a
 * click, see v2 run and the grant edit by `owner:web:…` in the log; no page reports a CSP
 * violation or a console error; markup planted in a config value, in a refused manifest's field
 * and in an egress host name shows as text everywhere; and the pages work with JavaScript off.
 * Every page is looked at 1280 px wide (long pending text keeps every column on the table) and
 * 390 px wide (nothing scrolls sideways, the header is one line). One browser for the file, one
 * page reused; a screenshot of each page at each width is kept in test-artifacts/console/.
 */
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { applyResources, EXAMPLES, OWNER_CLI, parseResources } from "../../src/app/index.js";
import { launchChromium, recordCspViolations } from "../support/chromium.js";
import type { TestBrowser } from "../support/chromium.js";
import { startConsoleDemo } from "../support/console-demo.js";
import type { ConsoleDemo } from "../support/console-demo.js";

const ARTIFACTS = fileURLToPath(new URL("../../test-artifacts/console/", import.meta.url));
/** Markup that would run if any page put it into the document instead of showing it. */
const PROBE = "<img src=x onerror=window.__xss=1><script>window.__xss=2</script>";

const V1 = readFileSync(join(EXAMPLES, "plugins", "nbp-fx.yaml"), "utf8");
const V2 = readFileSync(join(EXAMPLES, "upgrade", "nbp-fx-v2.yaml"), "utf8");
const GRANT = readFileSync(join(EXAMPLES, "plugins", "nbp-fx-grant.yaml"), "utf8");
const V1_IMAGE = /image: (\S+)/.exec(V1)?.[1] ?? "";
/** Hosts long enough to push a column off a table whose cells do not wrap them. */
const LONG_HOSTS = Array.from({ length: 8 }, (_, i) => `rates-archive-${i}.a-central-bank-with-a-rather-long-domain-name.example`);
/** The widths every page is looked at. */
const WIDE = { width: 1280, height: 900 };
const NARROW = { width: 390, height: 844 };

/** Every console page, by the name of its screenshot. */
const PAGES: readonly [string, string][] = [
  ["plugins", "/"],
  ["plugins-list", "/plugins"],
  ["plugin", "/plugins/nbp-fx"],
  ["plugin-long", "/plugins/long"],
  ["plugin-probe", "/plugins/probe"],
  ["plugin-refused", "/plugins/refused"],
  ["log-all", "/log?limit=200"],
  ["egress", "/egress"],
  ["integrity", "/integrity"],
  ["replay", "/replay"],
  ["replay-early", "/replay?at=8"],
];

let demo: ConsoleDemo;
let browser: TestBrowser;
let page: Page;
const problems: string[] = [];

/** Plants the probes: a config value, a refused manifest's field, an egress host name. */
async function plantProbes(d: ConsoleDemo): Promise<void> {
  const store = d.cp.runtime.store;
  const config = V1.replace(/name: nbp-fx/, "name: probe").replace(/startDate: .*/, `startDate: ${JSON.stringify(PROBE)}`);
  await applyResources(store, parseResources(`${config}---\n${GRANT.replace(/name: nbp-fx/, "name: probe")}`, "probe"), OWNER_CLI);
  // A Plugin as a cluster would hold it: not valid, so it is refused, and the refusal quotes the field.
  await store.observe({ stream: "plugin/refused", type: "plugin.observed", actor: "cluster", causedBy: null, data: { name: "refused", spec: { image: V1_IMAGE, manifest: { capabilities: ["connector"], egress: [{ host: PROBE }], secrets: [], dataTiers: [] } } } });
  await store.append([{ stream: "egress/nbp-fx", type: "egress.decision", actor: "egress", data: { plugin: "nbp-fx", host: PROBE, port: 443, allowed: false, reason: "not_listed", rules: 1 } }]);
  // A version that cannot run whatever is approved: nbp-fx v1 under another name, its config failing its schema.
  const blocked = V1.replace(/name: nbp-fx/, "name: blocked").replace(/startDate: .*/, "startDate: 7");
  await applyResources(store, parseResources(`${blocked}---\n${GRANT.replace(/name: nbp-fx/, "name: blocked").replace(/egress:[\s\S]*$/, "")}`, "blocked"), OWNER_CLI);
  // Something to approve with JavaScript off.
  await applyResources(store, parseResources(`${V2.replace(/name: nbp-fx/, "name: plain")}---\n${GRANT.replace(/name: nbp-fx/, "name: plain")}`, "plain"), OWNER_CLI);
  // A version that waits for many long host names: its pending text must wrap, not widen the table.
  const long = V1.replace(/name: nbp-fx/, "name: long").replace(/ {6}- host: api\.nbp\.pl\n/, LONG_HOSTS.map((h) => `      - host: ${h}\n`).join(""));
  await applyResources(store, parseResources(`${long}---\n${GRANT.replace(/name: nbp-fx/, "name: long")}`, "long"), OWNER_CLI);
  // A version that would run once approved, with nothing granted yet: more to approve than a list row shows.
  await applyResources(store, parseResources(V2.replace(/name: nbp-fx/, "name: many"), "many"), OWNER_CLI);
  await d.cp.pass();
}

/** Opens a page and waits until htmx has started on it. */
async function visit(path: string): Promise<void> {
  await page.goto(demo.url + path);
  await page.waitForFunction("'htmx' in window");
}

/** Keeps a screenshot of the whole page, named for the page and the width it was taken at. */
async function snapshot(name: string): Promise<void> {
  await page.screenshot({ path: join(ARTIFACTS, `${name}-${page.viewportSize()?.width ?? 0}.png`), fullPage: true });
}

/** What a page's layout does at the current width: sideways scrolling, the header's height, tables wider than their frame. */
async function layout(): Promise<{ sideways: number; header: number; hiddenLinks: number; widerTables: number }> {
  return (await page.evaluate(`({
    sideways: document.documentElement.scrollWidth - document.documentElement.clientWidth,
    header: Math.round(document.querySelector("header.top .bar").getBoundingClientRect().height),
    hiddenLinks: document.querySelector("header.top nav").scrollWidth - document.querySelector("header.top nav").clientWidth,
    widerTables: [...document.querySelectorAll(".table-wrap")].filter((w) => w.scrollWidth > w.clientWidth + 1).length,
  })`)) as { sideways: number; header: number; hiddenLinks: number; widerTables: number };
}

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  demo = await startConsoleDemo();
  await plantProbes(demo);
  browser = await launchChromium();
  // Counted in the page itself, before any of its scripts: every CSP violation it reports.
  await recordCspViolations(browser.context);
  page = await browser.context.newPage();
  page.on("console", (m) => { if (m.type() === "error" || m.type() === "warning") problems.push(`console ${m.type()}: ${m.text()}`); });
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("dialog", (d) => { problems.push(`dialog: ${d.message()}`); void d.dismiss(); });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await demo?.stop();
});

describe("the owner's console", () => {
  it("signs in with the one-time link and lands on the plugins, nbp-fx held back", async () => {
    await page.goto(await demo.signIn("alice", "owner"));
    expect(new URL(page.url()).pathname).toBe("/");
    await expect.poll(() => page.locator("h1").textContent()).toBe("Plugins");
    const row = page.locator("tr", { has: page.locator('a[href="/plugins/nbp-fx"]') });
    expect(await row.locator(".badge.held_back").textContent()).toContain("held back");
    // The code left the address bar, and the session is in an HttpOnly cookie no script can read.
    expect(page.url()).not.toContain("code=");
    expect(await page.evaluate("document.cookie")).toBe("");
    await snapshot("plugins");
  });

  it("shows a version that cannot run with what blocks it first, and offers no approval", async () => {
    await visit("/plugins/blocked");
    const blockers = page.locator("#blockers");
    expect(await blockers.locator("h2").innerText()).toBe("Cannot run as asked");
    expect(await blockers.locator("li").first().innerText()).toMatch(/^its config does not match its schema: spec\.config\.startDate: must be string\.$/);
    const button = page.locator("#pending button");
    expect(await button.innerText()).toBe("Approve: blocked by its config");
    expect(await button.isDisabled()).toBe(true);
    // First on the page, as the owner reads it: the blockers above the approval.
    const [b, p] = [await blockers.boundingBox(), await page.locator("#pending").boundingBox()];
    expect((b?.y ?? Infinity) < (p?.y ?? -Infinity)).toBe(true);
    await snapshot("plugin-blocked");
    await visit("/");
    expect(await page.locator("#blocked").innerText()).toMatch(/blocked: its config does not match its schema/);
    expect(await page.locator("section[aria-labelledby=waiting-h]").innerText()).not.toMatch(/\bblocked\b/);
    expect(await page.locator("tr", { has: page.locator('a[href="/plugins/blocked"]') }).locator('a[href="/plugins/blocked#blockers"] .badge').innerText()).toBe("blocked");
  });

  it("shows the held-back upgrade and exactly what approving adds", async () => {
    await visit("/plugins/nbp-fx");
    const pending = page.locator("#pending");
    expect(await page.locator("#blockers").count()).toBe(0);
    expect(await pending.locator("ul.adds").innerText()).toBe("+egress static.nbp.pl:443");
    expect(await pending.locator("button").innerText()).toBe("Approve: add egress static.nbp.pl:443");
    await snapshot("plugin-pending");
  });

  it("keeps the approval box, button and all, across the page's refresh while nothing changed", async () => {
    await visit("/plugins/nbp-fx");
    const button = await page.locator("#pending button").elementHandle();
    await page.locator("#pending button").hover();
    // A mark on the button's node: a re-rendered box would come without it.
    await page.evaluate(`document.querySelector("#pending button").dataset.seen = "before the refresh"`);
    // The page refreshes itself every few seconds; wait for one refresh to have happened.
    await page.evaluate(`new Promise((resolve) => document.body.addEventListener("htmx:afterSettle", resolve, { once: true }))`);
    expect(await button?.evaluate((b) => b.isConnected)).toBe(true);
    expect(await page.evaluate(`document.querySelector("#pending button").dataset.seen ?? null`)).toBe("before the refresh");
  });

  it("approves with a click, then shows v2 running", async () => {
    await Promise.all([page.waitForURL(/\/plugins\/nbp-fx\?approved=\d+$/), page.locator("#pending button").click()]);
    expect(await page.locator(".flash.ok").innerText()).toMatch(/^Approved: your grant edit is event \d+/);
    // htmx keeps the page current: the reconciler's decision arrives without a reload.
    await page.locator(".page-head .badge.running").waitFor({ timeout: 30_000 });
    expect(await page.locator("dl.facts dd").first().locator("code").getAttribute("title")).toContain("ac327d8f7783");
    expect(await page.locator("#pending").innerText()).toMatch(/Nothing waits for approval/);
    await snapshot("plugin-approved");
  });

  it("shows the grant edit by owner:web:alice in the log, and new events as they come", async () => {
    await visit("/log?plugin=nbp-fx&type=grant.observed");
    const edit = page.locator("#log-rows tr", { hasText: "owner:web:alice" });
    expect(await edit.locator("td").nth(5).innerText()).toBe("the grant was set by owner:web:alice: +egress static.nbp.pl:443");
    await visit("/log");
    const before = await demo.cp.runtime.store.head();
    await demo.cp.runtime.store.append([{ stream: "egress/nbp-fx", type: "egress.decision", actor: "egress", data: { plugin: "nbp-fx", host: "live.nbp.pl", port: 443, allowed: false, reason: "not_listed", rules: 1 } }]);
    await page.locator("#log-rows tr", { hasText: "live.nbp.pl" }).waitFor({ timeout: 20_000 });
    expect(await page.locator("#log-rows tr:not(.poll)").first().locator("td").first().innerText()).toBe(String(before + 1));
    await snapshot("log");
  });

  it.each(PAGES)("shows the %s page with no CSP violation, no console error, and every planted markup as text", async (name, path) => {
    await visit(path);
    await snapshot(name);
    const found = await page.evaluate(`({
      csp: window.__csp,
      xss: window.__xss ?? null,
      planted: document.querySelectorAll('img[src="x"], main script').length,
    })`);
    expect(found).toEqual({ csp: [], xss: null, planted: 0 });
    expect(problems).toEqual([]);
  });

  it.each<[string, string]>([
    ["a config value", "/plugins/probe"],
    ["a refused manifest's field", "/plugins/refused"],
    ["an egress host name", "/egress"],
    ["an egress host name in the log", "/log?plugin=nbp-fx&type=egress.decision"],
  ])("shows markup in %s as the text it is", async (_what, path) => {
    await visit(path);
    expect(await page.locator("main").innerText()).toContain(PROBE.slice(0, 30));
  });

  it.each(PAGES)("keeps every column of the %s page on its table at 1280 px, however long the pending text", async (_name, path) => {
    await visit(path);
    expect(await layout()).toMatchObject({ sideways: 0, widerTables: 0 });
  });

  it("shows the first three of a pending list whole, then how many more, and all of them on the plugin's page", async () => {
    await visit("/");
    const cell = page.locator("tr", { has: page.locator('a[href="/plugins/many"]') }).locator(".pending-text");
    const text = (await cell.innerText()).replace(/\s+/g, " ");
    expect(text).toBe("capability connector, egress api.nbp.pl:443, egress static.nbp.pl:443 and 1 more");
    await visit("/plugins/many");
    expect((await page.locator("#pending ul.adds").innerText()).split("\n")).toHaveLength(4);
    expect(await page.locator("#pending button").innerText()).toBe("Approve: add these 4 permissions");
  });

  it("offers no approval for a long pending list whose version cannot run, and keeps its text on the page", async () => {
    await visit("/plugins/long");
    expect(await page.locator("#pending button").isDisabled()).toBe(true);
    expect(await page.locator("#pending").innerText()).toContain(`egress ${LONG_HOSTS[7]}:443`);
    expect(await layout()).toMatchObject({ sideways: 0, widerTables: 0 });
  });

  it("follows the replay slider", async () => {
    await visit("/replay");
    await page.locator("#at-slider").fill("3");
    await page.locator("#replay-state h2", { hasText: "after event 3 of" }).waitFor({ timeout: 10_000 });
    expect(problems).toEqual([]);
  });
});

describe("the console on a phone, 390 px wide", () => {
  beforeAll(async () => {
    await page.setViewportSize(NARROW);
  });

  afterAll(async () => {
    await page.setViewportSize(WIDE);
  });

  it.each(PAGES)("shows the %s page without scrolling sideways, its header on one line", async (name, path) => {
    await visit(path);
    await snapshot(name);
    const l = await layout();
    expect(l.sideways).toBe(0);
    // One line: the bar's own height (3.25rem), not two or three rows of links, and every link on it.
    expect(l.header).toBeLessThanOrEqual(56);
    expect(l.hiddenLinks).toBe(0);
    expect(problems).toEqual([]);
  });
});

describe("the console with JavaScript off", () => {
  let p: Page;

  beforeAll(async () => {
    // The same browser, a page of its own that runs no script at all (htmx included).
    p = await browser.context.newPage();
    const cdp = await browser.context.newCDPSession(p);
    await cdp.send("Emulation.setScriptExecutionDisabled", { value: true });
  });

  afterAll(async () => {
    await p?.close();
  });

  it("runs no script on its page", async () => {
    await p.goto(`${demo.url}/plugins/plain`);
    expect(await p.evaluate("typeof window.htmx")).toBe("undefined");
  });

  it("approves with the plain form, redirected back to the plugin", async () => {
    await p.goto(`${demo.url}/plugins/plain`);
    await Promise.all([p.waitForURL(/\/plugins\/plain\?approved=\d+$/), p.locator("#pending button").click()]);
    expect(await p.locator(".flash.ok").innerText()).toMatch(/^Approved/);
    expect((await demo.cp.runtime.store.last("plugin/plain", "grant.observed"))?.actor).toBe("owner:web:alice");
  });

  it("filters the log with the plain form", async () => {
    await p.goto(`${demo.url}/log`);
    await p.locator('select[name="type"]').selectOption("rollout.decided");
    await Promise.all([p.waitForURL(/type=rollout\.decided/), p.locator("form.filters button").click()]);
    const types = await p.locator("#log-rows td.type").allInnerTexts();
    expect(types.length).toBeGreaterThan(0);
    expect(new Set(types)).toEqual(new Set(["rollout.decided"]));
  });

  it("replays to a sequence number with the plain form", async () => {
    await p.goto(`${demo.url}/replay`);
    await p.locator('input[name="at"][placeholder]').fill("5");
    await Promise.all([p.waitForURL(/at=5$/), p.locator("form.filters button").click()]);
    expect(await p.locator("#replay-state h2").innerText()).toMatch(/^The state after event 5 of \d+$/);
  });
});
