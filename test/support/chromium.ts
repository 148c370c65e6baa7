/**
 * A real browser for tests: Debian's `chromium` driven by playwright-core (which downloads
 * nothing), headless, with no sandbox (tests run as root), no GPU, nothing it would fetch on its
 * own (background networking, component updates, sync), and a fresh profile folder removed at the
 * end. Installed with apt-get when missing (tests and CI run as root), as the registry is.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";
import type { BrowserContext } from "playwright-core";

export const CHROMIUM_BINARY = "/usr/bin/chromium";

/** Installs Debian's chromium when it is missing. */
export function ensureChromiumInstalled(): void {
  if (existsSync(CHROMIUM_BINARY)) return;
  if (typeof process.getuid === "function" && process.getuid() !== 0) {
    throw new Error(`${CHROMIUM_BINARY} is missing; install it with: apt-get install -y chromium`);
  }
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  execFileSync("apt-get", ["update"], { stdio: "ignore", env });
  execFileSync("apt-get", ["install", "-y", "--no-install-recommends", "chromium"], { stdio: "ignore", env });
  if (!existsSync(CHROMIUM_BINARY)) throw new Error(`apt-get did not install ${CHROMIUM_BINARY}`);
}

/** The flags every launch uses. */
export const CHROMIUM_ARGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
  "--disable-default-apps",
  "--disable-extensions",
];

/** A browser with its own profile; `close()` ends it and removes the profile. */
export interface TestBrowser {
  readonly context: BrowserContext;
  close(): Promise<void>;
}

/** Launches headless chromium with a fresh `--user-data-dir`. */
export async function launchChromium(o: { viewport?: { width: number; height: number }; deviceScaleFactor?: number } = {}): Promise<TestBrowser> {
  ensureChromiumInstalled();
  const profile = mkdtempSync(join(tmpdir(), "openfief-chromium-"));
  // A persistent context is how playwright passes a profile folder (it refuses --user-data-dir in args).
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM_BINARY,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: o.viewport ?? { width: 1280, height: 900 },
    deviceScaleFactor: o.deviceScaleFactor ?? 1,
    locale: "en-GB",
    timezoneId: "UTC",
  });
  return {
    context,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** Has every page of `context` count the CSP violations it reports, in `window.__csp`, from before any of its own scripts run. */
export async function recordCspViolations(context: BrowserContext): Promise<void> {
  await context.addInitScript(`
    window.__csp = [];
    document.addEventListener("securitypolicyviolation", (e) => window.__csp.push(e.violatedDirective + " " + e.blockedURI));
  `);
}
