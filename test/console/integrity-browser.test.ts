/**
 * The integrity page in Chromium, before and after a signed checkpoint: the Chain head card keeps
 * the same gap below the two cards above it as every card; before any checkpoint the proof card
 * offers no download and says proofs come after the next checkpoint; once one covers events 1 to
 * N, the form takes 1 to N (N+1 is refused by the field itself), says when the later events get
 * theirs, and its button downloads event-N.tlog-proof. At 1280 and 390 px wide, nothing wider than
 * the page, no CSP violation; screenshots are kept in test-artifacts/console/.
 */
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadLogKey, signCheckpointNow } from "../../src/app/index.js";
import { launchChromium, recordCspViolations } from "../support/chromium.js";
import type { TestBrowser } from "../support/chromium.js";
import { startConsoleDemo } from "../support/console-demo.js";
import type { ConsoleDemo } from "../support/console-demo.js";

const ARTIFACTS = fileURLToPath(new URL("../../test-artifacts/console/", import.meta.url));
const WIDTHS = [[1280, 900], [390, 844]] as const;

let demo: ConsoleDemo;
let browser: TestBrowser;
let page: Page;

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  // No checkpoint is signed unless the test signs one.
  demo = await startConsoleDemo({ history: false });
  browser = await launchChromium();
  await recordCspViolations(browser.context);
  page = await browser.context.newPage();
  await page.goto(await demo.signIn("bob", "viewer"));
}, 120_000);

afterAll(async () => {
  await browser.close();
  await demo.stop();
});

const sideways = async (): Promise<unknown> => page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth");

/** Opens /integrity at each width, runs `check`, and keeps a screenshot of the page and of the proof card. */
async function atEachWidth(name: string, check: (width: number) => Promise<void>): Promise<void> {
  for (const [width, height] of WIDTHS) {
    await page.setViewportSize({ width, height });
    await page.goto(`${demo.url}/integrity`);
    await check(width);
    expect(await sideways()).toBe(0);
    await page.locator("#proof").screenshot({ path: join(ARTIFACTS, `integrity-${name}-proof-${width}.png`) });
    await page.screenshot({ path: join(ARTIFACTS, `integrity-${name}-${width}.png`), fullPage: true });
    expect(await page.evaluate("window.__csp")).toEqual([]);
  }
}

/** The Chain head card stands apart from the cards above it by the grid's own gap (1rem), not touching. */
async function chainHeadApart(): Promise<void> {
  const grid = await page.locator(".grid").boundingBox();
  const head = await page.locator("section.card", { has: page.locator("h2", { hasText: /^Chain head$/ }) }).boundingBox();
  if (grid === null || head === null) throw new Error("no grid or Chain head card");
  const gap = await page.evaluate("parseFloat(getComputedStyle(document.querySelector('.grid')).rowGap)");
  expect(head.y - (grid.y + grid.height)).toBeCloseTo(gap as number, 0);
  expect(gap).toBeGreaterThan(0);
}

describe("the integrity page's proof card", () => {
  it("before any checkpoint: no download, and a line saying proofs come after the next checkpoint", async () => {
    await atEachWidth("no-checkpoint", async () => {
      await chainHeadApart();
      const proof = page.locator("#proof");
      expect(await proof.locator("h2").innerText()).toBe("Proof of an event");
      expect(await proof.locator("form, button, input").count()).toBe(0);
      expect(await proof.locator("#proof-hint").innerText()).toBe(
        "No event can be proven yet: a proof needs a signed checkpoint that covers the event. Proofs can be downloaded after the next checkpoint (signed within seconds of the log growing).",
      );
    });
  }, 60_000);

  it("after a checkpoint of events 1 to N: the form takes 1 to N, says when later events get theirs, and downloads the proof", async () => {
    const store = demo.cp.runtime.store;
    const c = await signCheckpointNow(store, loadLogKey({ dataDir: demo.dir }));
    if (c === null) throw new Error("no checkpoint");
    // Two events after it (the checkpoint's own event is one): not covered yet.
    await store.append([{ stream: "egress/ecb-fx", type: "egress.decision", actor: "egress", data: { plugin: "ecb-fx", host: "www.ecb.europa.eu", port: 443, allowed: true, reason: "listed", rules: 1 } }]);
    const head = await store.head();
    expect(head).toBeGreaterThan(c.size + 1);
    await atEachWidth("checkpoint", async (width) => {
      await chainHeadApart();
      const proof = page.locator("#proof");
      const field = page.getByLabel("Event number");
      expect(await field.getAttribute("max")).toBe(String(c.size));
      expect(await proof.locator("#proof-hint").innerText()).toBe(
        `Downloads event-N.tlog-proof: the event, its inclusion proof and a signed checkpoint, which openfief verify-proof checks offline. Events 1 to ${c.size} have one (the newest checkpoint covers them). Events ${c.size + 1} to ${head} get one after the next checkpoint.`,
      );
      // An event past the checkpoint is refused by the field before anything is sent.
      await field.fill(String(c.size + 1));
      expect(await page.evaluate("document.querySelector('#proof-seq').validity.rangeOverflow")).toBe(true);
      await field.fill(String(c.size));
      expect(await page.evaluate("document.querySelector('#proof-seq').validity.valid")).toBe(true);
      if (width !== 1280) return;
      const [download] = await Promise.all([page.waitForEvent("download"), proof.getByRole("button", { name: "Download proof" }).click()]);
      expect(download.suggestedFilename()).toBe(`event-${c.size}.tlog-proof`);
      const path = await download.path();
      expect(readFileSync(path, "utf8")).toMatch(/^c2sp\.org\/tlog-proof@v1\nextra /);
    });
  }, 60_000);
});
