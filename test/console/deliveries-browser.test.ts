/**
 * A connector's page in Chromium: its schedule, its next sync and its latest deliveries (a file
 * imported through ecb-fx), at a desktop width and a phone's, with nothing wider than the page.
 * Screenshots go to $OPENFIEF_SCREENSHOTS when set.
 */
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dataDirDeliveries, importFile, OWNER_CLI } from "../../src/app/index.js";
import { launchChromium } from "../support/chromium.js";
import type { TestBrowser } from "../support/chromium.js";
import { startConsoleDemo } from "../support/console-demo.js";
import type { ConsoleDemo } from "../support/console-demo.js";

const ROOT = new URL("../../", import.meta.url).pathname;
let demo: ConsoleDemo;
let batchId = "";

beforeAll(async () => {
  demo = await startConsoleDemo({ history: false });
  const hosted = demo.cp.hosted;
  if (hosted === null) throw new Error("no plugin host");
  const r = await importFile(hosted, dataDirDeliveries(demo.dir), demo.cp.runtime.store, {
    plugin: "ecb-fx", file: join(ROOT, "plugins", "ecb-fx", "fixtures", "eurofxref-daily.xml"), actor: OWNER_CLI, mediaType: "application/xml",
  });
  if (!r.ok || r.preview) throw new Error(`import failed: ${JSON.stringify(r)}`);
  batchId = r.batchId;
}, 120_000);

afterAll(async () => {
  await demo.stop();
});

describe("a connector's syncs and deliveries in the console", () => {
  it.each([[1280, 900], [390, 844]])("shows its schedule, next sync and latest deliveries at %i px", async (width, height) => {
    let browser: TestBrowser | null = null;
    try {
      browser = await launchChromium({ viewport: { width, height } });
      const page = await browser.context.newPage();
      await page.goto(await demo.signIn());
      await page.goto(`${demo.url}/plugins/ecb-fx`);
      const card = page.locator("#deliveries");
      await card.waitFor();
      const text = await card.innerText();
      expect(text).toContain("Syncs and deliveries");
      expect(text).toMatch(/every 24h, jitter 30m/);
      expect(text).toMatch(/Next sync/i);
      expect(text).toContain(batchId);
      expect(text).toMatch(/30 FX rates/);
      const wide = await page.evaluate(`({
        sideways: document.documentElement.scrollWidth - document.documentElement.clientWidth,
        widerTables: [...document.querySelectorAll("#deliveries .table-wrap")].filter((w) => w.scrollWidth > w.clientWidth + 1).length,
      })`);
      expect(wide).toEqual({ sideways: 0, widerTables: 0 });
      const out = process.env["OPENFIEF_SCREENSHOTS"];
      if (out !== undefined && out !== "") {
        // The page polls and swaps the card every 3 s: a clip of the page, not of the element.
        const box = await card.boundingBox();
        if (box !== null) await page.screenshot({ path: join(out, `deliveries-${width}.png`), fullPage: true, clip: box });
      }
      // A plugin that is no connector has no such card.
      await page.goto(`${demo.url}/plugins/ledger-view`);
      expect(await page.locator("#deliveries").count()).toBe(0);
    } finally {
      await browser?.close();
    }
  }, 60_000);
});
