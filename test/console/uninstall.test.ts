/**
 * Uninstall from the console, in Debian's chromium: the plugin page's Uninstall leads to a
 * confirmation naming exactly what goes (its objects, its grant, its own Secret), and confirming it
 * records the uninstall that the running control plane carries out; the plugin page then says it
 * is a removed instance. Screenshots at 1280 and 390 px wide are kept in test-artifacts/console/.
 */
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse, stringify } from "yaml";
import { applyResources, EXAMPLES, OWNER_CLI, parseResources } from "../../src/app/index.js";
import { launchChromium, recordCspViolations } from "../support/chromium.js";
import type { TestBrowser } from "../support/chromium.js";
import { startConsoleDemo } from "../support/console-demo.js";
import type { ConsoleDemo } from "../support/console-demo.js";

const ARTIFACTS = fileURLToPath(new URL("../../test-artifacts/console/", import.meta.url));

let demo: ConsoleDemo;
let browser: TestBrowser;
let page: Page;
const problems: string[] = [];

/** ledger-view's signed image installed again as `ledger-b`, its Secret role mapped to its own Secret. */
async function secondInstance(d: ConsoleDemo): Promise<void> {
  const plugin = parse(readFileSync(join(EXAMPLES, "plugins", "ledger-view.yaml"), "utf8")) as { metadata: { name: string } };
  const grant = parse(readFileSync(join(EXAMPLES, "plugins", "ledger-view-grant.yaml"), "utf8")) as { metadata: { name: string }; spec: Record<string, unknown> };
  plugin.metadata.name = "ledger-b";
  grant.metadata.name = "ledger-b";
  delete grant.spec["secrets"];
  grant.spec["secretRoles"] = [{ role: "ledger-view-session" }];
  await applyResources(d.cp.runtime.store, parseResources(`${stringify(plugin)}---\n${stringify(grant)}`, "ledger-b"), OWNER_CLI);
  await d.cp.pass();
}

async function layout(): Promise<{ sideways: number }> {
  return (await page.evaluate("({ sideways: document.documentElement.scrollWidth - document.documentElement.clientWidth })")) as { sideways: number };
}

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  demo = await startConsoleDemo();
  await secondInstance(demo);
  browser = await launchChromium();
  await recordCspViolations(browser.context);
  page = await browser.context.newPage();
  page.on("console", (m) => { if (m.type() === "error" || m.type() === "warning") problems.push(`console ${m.type()}: ${m.text()}`); });
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await demo?.stop();
});

describe("uninstall from the console", () => {
  it("confirms first, naming exactly what goes; looked at 1280 and 390 px wide", async () => {
    await page.goto(await demo.signIn("alice", "owner"));
    await page.goto(`${demo.url}/plugins/ledger-b`);
    const link = page.locator("#uninstall a");
    expect(await link.innerText()).toBe("Uninstall ledger-b…");
    await link.click();
    await page.waitForURL(/\/plugins\/ledger-b\/uninstall$/);
    const items = await page.locator("#confirm-uninstall li").allInnerTexts();
    expect(items.map((t) => t.replace(/^−\s*/, ""))).toEqual([
      "its objects and its allow-list entry (it stops running)",
      "its grant",
      "Secret ledger-b-ledger-view-session",
    ]);
    for (const size of [{ width: 1280, height: 900 }, { width: 390, height: 844 }]) {
      await page.setViewportSize(size);
      expect((await layout()).sideways).toBe(0);
      await page.screenshot({ path: join(ARTIFACTS, `uninstall-confirm-${size.width}.png`), fullPage: true });
    }
    await page.setViewportSize({ width: 1280, height: 900 });
  }, 60_000);

  it("uninstalls on confirming; the control plane carries it out and the page shows a removed instance", async () => {
    await page.locator("#confirm-uninstall button[type=submit]").click();
    await page.waitForURL(/\/plugins\/ledger-b$/);
    await demo.cp.pass();
    const store = demo.cp.runtime.store;
    const done = await store.read({ stream: "plugin/ledger-b", type: "plugin.uninstalled" });
    expect(done.map((e) => e.data)).toEqual([expect.objectContaining({ grant: true, secrets: [], absent: ["ledger-b-ledger-view-session"] })]);
    const [request] = await store.read({ stream: "plugin/ledger-b", type: "plugin.uninstall.requested" });
    expect(request?.actor).toMatch(/^owner:web:/);
    await page.goto(`${demo.url}/plugins/ledger-b`);
    expect(await page.locator("#removed p").first().innerText()).toMatch(/^ledger-b is a removed instance: it was uninstalled at \S+ \S+ UTC \(event \d+\)/);
    expect(await page.locator(".page-head .badge").innerText()).toContain("removed instance");
    expect(await page.locator("#uninstall").count()).toBe(0);
    for (const size of [{ width: 1280, height: 900 }, { width: 390, height: 844 }]) {
      await page.setViewportSize(size);
      expect((await layout()).sideways).toBe(0);
      await page.screenshot({ path: join(ARTIFACTS, `uninstall-done-${size.width}.png`), fullPage: true });
    }
    expect(await page.evaluate("window.__csp")).toEqual([]);
    expect(problems).toEqual([]);
  }, 60_000);
});
