/**
 * Verified plugins in the console and the JSON API, on the shipped demo in a real browser: the
 * first-party plugins the catalog pins show as verified, with since when; nbp-fx's held-back v2,
 * signed by the demo owner at a digest the catalog does not pin, shows as trusted with the catalog
 * entry it does not match, never as verified. Each page is looked at 1280 and 390 px wide (nothing
 * scrolls sideways) and kept in test-artifacts/console/.
 */
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchChromium } from "../support/chromium.js";
import type { TestBrowser } from "../support/chromium.js";
import { startConsoleDemo } from "../support/console-demo.js";
import type { ConsoleDemo } from "../support/console-demo.js";

const ARTIFACTS = fileURLToPath(new URL("../../test-artifacts/console/", import.meta.url));
const WIDTHS = [{ width: 1280, height: 900 }, { width: 390, height: 844 }] as const;
/** The digest the shipped catalog pins ecb-fx at, as the page shortens it (the demo regenerates it). */
const ECB_DIGEST = ((JSON.parse(readFileSync(fileURLToPath(new URL("../../catalog/plugins.json", import.meta.url)), "utf8")) as { plugins: Array<{ name: string; image: string }> })
  .plugins.find((p) => p.name === "ecb-fx")?.image.split("@")[1] ?? "missing").slice(0, 7 + 12);
const SINCE = /verified since \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC/;

let demo: ConsoleDemo;
let browser: TestBrowser;
let page: Page;
const problems: string[] = [];

async function visit(path: string): Promise<void> {
  await page.goto(demo.url + path);
  await page.waitForFunction("'htmx' in window");
}

/** Looks at the current page at both widths: a screenshot each (and of its top), and nothing scrolling sideways. */
async function atBothWidths(name: string): Promise<void> {
  for (const size of WIDTHS) {
    await page.setViewportSize(size);
    await page.screenshot({ path: join(ARTIFACTS, `${name}-${size.width}.png`), fullPage: true });
    await page.screenshot({ path: join(ARTIFACTS, `${name}-${size.width}-top.png`) });
    expect(await page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")).toBeLessThanOrEqual(0);
  }
  await page.setViewportSize(WIDTHS[0]);
}

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  demo = await startConsoleDemo({ history: false });
  browser = await launchChromium();
  page = await browser.context.newPage();
  page.on("console", (m) => { if (m.type() === "error") problems.push(`console error: ${m.text()}`); });
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  await page.goto(await demo.signIn("alice", "viewer"));
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await demo?.stop();
});

describe("verified plugins in the console", () => {
  it("shows the catalog's plugins as verified on the plugins page, and nbp-fx's v2 with the entry it does not match", async () => {
    await visit("/");
    const badge = (name: string) => page.locator("tr", { has: page.locator(`a[href="/plugins/${name}"]`) }).locator("td[data-label=Signature] .badge");
    expect(await badge("ecb-fx").innerText()).toBe("verified");
    expect(await badge("ledger-view").innerText()).toBe("verified");
    expect(await badge("nbp-fx").innerText()).toBe("trusted");
    expect(await page.locator("ul.catalog-notes").innerText()).toBe(
      "nbp-fx: catalog lists nbp-fx at sha256:32a155bf1326 by openfief-release; this image is sha256:ac327d8f7783; not verified.",
    );
    await atBothWidths("catalog-plugins");
  });

  it("says on a verified plugin's page since when it is verified", async () => {
    await visit("/plugins/ecb-fx");
    const signature = page.locator("dt:text-is('Signature') + dd");
    expect(await signature.locator(".badge").innerText()).toBe("verified");
    expect(await signature.innerText()).toMatch(SINCE);
    expect(await signature.innerText()).toContain("in the catalog as ecb-fx");
    // why, on the same page: the catalog's word after the decision's story.
    expect(await page.locator("section.why").innerText()).toContain(`The catalog pins ecb-fx at ${ECB_DIGEST}… by openfief-release, who signed it: verified since`);
    await atBothWidths("catalog-plugin-verified");
  });

  it("never shows the mismatched upgrade as verified, and says what does not match", async () => {
    await visit("/plugins/nbp-fx");
    const signature = page.locator("dt:text-is('Signature') + dd");
    expect(await signature.locator(".badge").innerText()).toBe("trusted");
    expect(await signature.innerText()).toContain(
      "catalog lists nbp-fx at sha256:32a155bf13262adffa93e0d7023b17306472f1dcb8d93c686bfe850e9dc594cb by openfief-release; this image is sha256:ac327d8f7783deccfac561eb6d7231f9a77c219bb934886e9e9e04dd2193321d",
    );
    expect(await signature.innerText()).not.toMatch(/verified since/);
    await atBothWidths("catalog-plugin-mismatch");
  });

  it("carries the catalog's word in the JSON API", async () => {
    const token = await demo.token("alice", "viewer");
    const r = await fetch(`${demo.url}/api/v1/plugins`, { headers: { authorization: `Bearer ${token}` } });
    expect(r.status).toBe(200);
    const body = (await r.json()) as { plugins: { name: string; verdict: string; signature: { catalog: Record<string, unknown> | null } }[] };
    const by = new Map(body.plugins.map((x) => [x.name, x]));
    expect(by.get("ecb-fx")).toMatchObject({ verdict: "verified", signature: { catalog: { standing: "verified", entry: "ecb-fx", publisher: "openfief-release", sinceEvent: expect.any(Number) } } });
    expect(by.get("nbp-fx")).toMatchObject({
      verdict: "unverified",
      signature: { catalog: { standing: "other_digest", entry: "nbp-fx", listed: "sha256:32a155bf13262adffa93e0d7023b17306472f1dcb8d93c686bfe850e9dc594cb", digest: "sha256:ac327d8f7783deccfac561eb6d7231f9a77c219bb934886e9e9e04dd2193321d" } },
    });
  });

  it("reported no console error or page error", () => {
    expect(problems).toEqual([]);
  });
});
