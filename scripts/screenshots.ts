/**
 * `npm run screenshots`: the console's pages as PNGs in docs/console/, from the shipped demo with a
 * day of history (test/support/console-demo.ts), in Debian's chromium. The README shows one.
 * Run it after changing a page, look at the pictures, and commit them.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { launchChromium } from "../test/support/chromium.js";
import { startConsoleDemo } from "../test/support/console-demo.js";

const OUT = fileURLToPath(new URL("../docs/console/", import.meta.url));

/** Each page whole, and the plugin page's first screen for the README. */
const PAGES: readonly [string, string, boolean][] = [
  ["console", "/plugins/nbp-fx", false],
  ["plugins", "/", true],
  ["plugin", "/plugins/nbp-fx", true],
  ["log", "/log", true],
  ["egress", "/egress", true],
  ["integrity", "/integrity", true],
  ["replay", "/replay", true],
  ["view", "/plugins/ledger-view", false],
];

mkdirSync(OUT, { recursive: true });
const demo = await startConsoleDemo({ views: true });
const browser = await launchChromium({ viewport: { width: 1280, height: 860 } });
try {
  const page = await browser.context.newPage();
  await page.goto(await demo.signIn("alice", "owner"));
  for (const [name, path, fullPage] of PAGES) {
    await page.goto(demo.url + path);
    // A view: until it has listed the plugins through the gateway (its watch keeps the network busy).
    const view = page.frames().find((f) => f !== page.mainFrame() && f.url().includes("/console/"));
    if (view === undefined) await page.waitForLoadState("networkidle");
    // (As a promise: waitForFunction would evaluate a string with eval, which the view's CSP refuses.)
    else await view.evaluate(`new Promise((resolve) => { const check = () => /read through the gateway/.test(document.getElementById("status")?.textContent ?? "") ? resolve(true) : setTimeout(check, 50); check(); })`);
    const file = join(OUT, `${name}.png`);
    await page.screenshot({ path: file, fullPage });
    console.log(`screenshots: ${file}`);
  }
} finally {
  await browser.close();
  await demo.stop();
}
