/**
 * A removed instance in Chromium: ecb-fx keeps a delivery, is uninstalled, and its page, its
 * deliveries card, the log page and the egress page say so in the words every face uses ("from removed instance
 * ecb-fx (removed at …)"); the integrity page gives an event's proof a card of its own. At 1280 and 390 px wide, nothing wider than the page,
 * no CSP violation; screenshots are kept in test-artifacts/console/.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dataDirDeliveries, importFile, OWNER_CLI, uninstallPlugin } from "../../src/app/index.js";
import { launchChromium, recordCspViolations } from "../support/chromium.js";
import type { TestBrowser } from "../support/chromium.js";
import { startConsoleDemo } from "../support/console-demo.js";
import type { ConsoleDemo } from "../support/console-demo.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const ARTIFACTS = join(ROOT, "test-artifacts", "console");
const MARK = /from removed instance ecb-fx \(removed at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC, event \d+, uninstalled\)/;

let demo: ConsoleDemo;
let batchId = "";

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  demo = await startConsoleDemo({ history: false });
  const hosted = demo.cp.hosted;
  if (hosted === null) throw new Error("no plugin host");
  const r = await importFile(hosted, dataDirDeliveries(demo.dir), demo.cp.runtime.store, {
    plugin: "ecb-fx", file: join(ROOT, "plugins", "ecb-fx", "fixtures", "eurofxref-daily.xml"), actor: OWNER_CLI, mediaType: "application/xml",
  });
  if (!r.ok || r.preview) throw new Error(`import failed: ${JSON.stringify(r)}`);
  batchId = r.batchId;
  // A connection the proxy refused it, before it went.
  await demo.cp.runtime.store.append([{ stream: "egress/ecb-fx", type: "egress.decision", actor: "egress", data: { plugin: "ecb-fx", host: "tracker.example", port: 443, allowed: false, reason: "not_listed", rules: 1 } }]);
  await uninstallPlugin(demo.cp.runtime.store, "ecb-fx", OWNER_CLI, null);
  await demo.cp.pass();
}, 120_000);

afterAll(async () => {
  await demo.stop();
});

const sideways = async (page: Page): Promise<unknown> => page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth");

/** The plugin page: the head's badge, the removed card, the deliveries card with its row marked. */
async function pluginPage(page: Page, width: number): Promise<void> {
  await page.goto(`${demo.url}/plugins/ecb-fx`);
  expect(await page.locator(".page-head .badge").innerText()).toContain("removed instance");
  expect(await page.locator("#removed").innerText()).toMatch(/ecb-fx is a removed instance: it was uninstalled at .* UTC \(event \d+\), removing its objects and allow-list entry, its grant, module [0-9a-f]{12}/);
  const card = page.locator("#deliveries");
  expect(await card.innerText()).toContain(batchId);
  expect(await card.locator(".removed-from").innerText()).toMatch(MARK);
  expect(await card.innerText()).toContain("never: ecb-fx is a removed instance");
  // No Uninstall for what is already removed.
  expect(await page.locator("#uninstall").count()).toBe(0);
  expect(await sideways(page)).toBe(0);
  await page.screenshot({ path: join(ARTIFACTS, `removed-plugin-${width}.png`), fullPage: true });
  // The head of the page as it first shows, and the deliveries card (a clip: the page swaps the card every 3 s).
  await page.screenshot({ path: join(ARTIFACTS, `removed-plugin-top-${width}.png`) });
  const box = await card.boundingBox();
  if (box !== null) await page.screenshot({ path: join(ARTIFACTS, `removed-deliveries-${width}.png`), fullPage: true, clip: box });
}

/** The log page: the delivery's event marked. */
async function logPage(page: Page, width: number): Promise<void> {
  await page.goto(`${demo.url}/log?plugin=ecb-fx`);
  const imported = page.locator("tr", { hasText: "import.delivered" });
  expect(await imported.innerText()).toMatch(MARK);
  expect(await sideways(page)).toBe(0);
  await page.screenshot({ path: join(ARTIFACTS, `removed-log-${width}.png`), fullPage: true });
  const box = await imported.boundingBox();
  if (box !== null) await page.screenshot({ path: join(ARTIFACTS, `removed-log-row-${width}.png`), fullPage: true, clip: box });
}

/** The egress page: the removed instance's decisions, marked in its card and in the latest decisions. */
async function egressPage(page: Page, width: number): Promise<void> {
  await page.goto(`${demo.url}/egress?plugin=ecb-fx`);
  const marks = await page.locator(".removed-from").allInnerTexts();
  expect(marks.length).toBe(2);
  for (const m of marks) expect(m).toMatch(MARK);
  expect(await sideways(page)).toBe(0);
  await page.screenshot({ path: join(ARTIFACTS, `removed-egress-${width}.png`), fullPage: true });
}

/** The integrity page: the proof in a card of its own; no checkpoint is signed here, so it says when (integrity-browser.test.ts has the download). */
async function integrityPage(page: Page, width: number): Promise<void> {
  await page.goto(`${demo.url}/integrity`);
  const proof = page.locator("#proof");
  expect(await proof.locator("h2").innerText()).toBe("Proof of an event");
  expect(await proof.locator("#proof-hint").innerText()).toMatch(/Proofs can be downloaded after the next checkpoint/);
  expect(await proof.locator("button").count()).toBe(0);
  expect(await sideways(page)).toBe(0);
  await proof.screenshot({ path: join(ARTIFACTS, `integrity-proof-${width}.png`) });
  await page.screenshot({ path: join(ARTIFACTS, `integrity-${width}.png`), fullPage: true });
}

describe("a removed instance in the console", () => {
  it.each([[1280, 900], [390, 844]])("its page, its deliveries and the log say removed instance; the proof has its own card (%i px)", async (width, height) => {
    let browser: TestBrowser | null = null;
    try {
      browser = await launchChromium({ viewport: { width, height } });
      await recordCspViolations(browser.context);
      const page = await browser.context.newPage();
      await page.goto(await demo.signIn("alice", "owner"));
      await pluginPage(page, width);
      await logPage(page, width);
      await egressPage(page, width);
      await integrityPage(page, width);
      expect(await page.evaluate("window.__csp")).toEqual([]);
    } finally {
      await browser?.close();
    }
  }, 60_000);
});
