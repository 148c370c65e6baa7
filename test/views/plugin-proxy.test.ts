/**
 * The plugin proxy through real HTTP on 127.0.0.1, reached by its own name (`localhost`): a view's
 * files from a bundle GNU tar made, with FUN-17's CSP exactly; the browser SDK and its context;
 * GET and HEAD only; every spelling of a way out of the bundle refused; only a version a decision
 * runs; the installation routes on this origin through the gateway's gates; `/csp-reports` reserved.
 */
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Registry } from "prom-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pluginStream } from "../../src/events/index.js";
import type { EventLog } from "../../src/events/index.js";
import type { JsonValue } from "../../src/plugins/index.js";
import {
  EmbeddedUpstream, LogInstallations, StoreDecisionRecorder, UiBundles, ViewMetrics, createGateway, createInstallationRoutes, createPluginProxy, pluginProxyCsp, rbacViewAccess, signPluginToken,
} from "../../src/views/index.js";
import type { BlobRead, ViewOrigins } from "../../src/views/index.js";
import { IMAGE, MANIFEST, PLUGIN, ROLES, call, capturedLogger, decide, installView, tempStore, tokens } from "./support.js";

const ROOT = join(import.meta.dirname, "../..");
const SDK = readFileSync(join(ROOT, "sdk/browser/sdk.js"));
const VERSION = IMAGE.split("@")[1] as string;

let store: EventLog;
let cleanup: () => Promise<void>;
let dir: string;
let port: number;
let origins: ViewOrigins;
let host: string;
let bundleDigest: string;
let closeServer: () => Promise<void>;
const blobs = new Map<string, Uint8Array>();
const reads: string[] = [];
const registry = new Registry();
const log = capturedLogger();
let t: Awaited<ReturnType<typeof tokens>>;

/** A view's UI as a vendor makes it: files in a folder, tarred by GNU tar. */
function gnuTar(files: Record<string, string>): Buffer {
  const src = join(dir, `ui-${Object.keys(files).length}-${Math.random().toString(36).slice(2)}`);
  for (const [name, content] of Object.entries(files)) {
    mkdirSync(join(src, name, ".."), { recursive: true });
    writeFileSync(join(src, name), content);
  }
  const out = `${src}.tar`;
  execFileSync("tar", ["-cf", out, "-C", src, "."]);
  return readFileSync(out);
}

const digestOf = (b: Uint8Array) => `sha256:${createHash("sha256").update(b).digest("hex")}`;

beforeAll(async () => {
  ({ store, cleanup } = await tempStore());
  dir = mkdtempSync(join(tmpdir(), "openfief-proxy-"));
  t = await tokens();
  const bundle = gnuTar({ "index.html": "<!doctype html><title>x</title>", "js/app.js": "export const a = 1;\n", "css/style.css": "p{}", "img/logo@2x.png": "png", "data.bin": "?" });
  bundleDigest = digestOf(bundle);
  blobs.set(bundleDigest, bundle);
  await installView(store, PLUGIN, { ...MANIFEST, ui: { bundle: bundleDigest, entry: "index.html" } } as unknown as JsonValue);
  // A second view whose blob is not what its digest says.
  const forged = `sha256:${"e".repeat(64)}`;
  blobs.set(forged, gnuTar({ "index.html": "forged" }));
  await installView(store, "forged-view", { ...MANIFEST, ui: { bundle: forged, entry: "index.html" } } as unknown as JsonValue);
  // A view asked for but never decided: its bundle was never verified.
  await store.append([{ stream: pluginStream("undecided"), type: "plugin.observed", actor: "owner:cli", data: { name: "undecided", spec: { image: IMAGE, manifest: { ...MANIFEST, ui: { bundle: bundleDigest, entry: "index.html" } } as unknown as JsonValue } } }]);

  const server = createServer();
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  port = (server.address() as AddressInfo).port;
  host = `localhost:${port}`;
  origins = { console: "http://127.0.0.1:4780", pluginProxy: `http://${host}`, gateway: "http://localhost:4782" };
  const installations = new LogInstallations(store);
  const gateway = createGateway({
    clusterId: "embedded", tokens: t.plugins, installations, access: rbacViewAccess(ROLES), upstream: new EmbeddedUpstream(store, ROLES),
    recorder: new StoreDecisionRecorder(store), pluginProxyOrigin: origins.pluginProxy, installationRoutes: createInstallationRoutes(),
  });
  const source = {
    async read(image: string, digest: string): Promise<BlobRead> {
      reads.push(`${image} ${digest}`);
      const b = blobs.get(digest);
      return b === undefined ? { ok: false, retry: false, message: "no such blob" } : { ok: true, bytes: b };
    },
  };
  const proxy = createPluginProxy({ origins, installations, bundles: new UiBundles(source), sdk: { version: "0.1.0", source: SDK }, gateway, logger: log.logger, metrics: new ViewMetrics(registry) });
  proxy.attach(server);
  closeServer = () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); });
});

afterAll(async () => {
  await closeServer();
  await cleanup();
  rmSync(dir, { recursive: true, force: true });
});

const get = (path: string, method = "GET", headers: Record<string, string> = {}) => call(`http://127.0.0.1:${port}`, method, path, { host, ...headers });
const asset = (file: string, name = PLUGIN, version = VERSION) => `/plugins/${name}/${version}/console/${file}`;

describe("a view's files", () => {
  it("carry FUN-17's CSP exactly, nosniff, no-referrer and immutable caching", async () => {
    const r = await get(asset("index.html"));
    expect(r.status).toBe(200);
    expect(r.body).toBe("<!doctype html><title>x</title>");
    expect(r.headers["content-security-policy"]).toBe(
      `default-src 'self'; script-src 'self'; style-src 'self'; connect-src http://localhost:4782 http://${host}; form-action http://localhost:4782 http://${host}; frame-ancestors http://127.0.0.1:4780; base-uri 'none'; object-src 'none'`,
    );
    expect(r.headers["content-security-policy"]).toBe(pluginProxyCsp(origins));
    expect(r.headers["x-content-type-options"]).toBe("nosniff");
    expect(r.headers["referrer-policy"]).toBe("no-referrer");
    expect(r.headers["cache-control"]).toBe("public, max-age=31536000, immutable");
    expect(r.headers["content-type"]).toBe("text/html; charset=utf-8");
    expect(r.headers["set-cookie"]).toBeUndefined();
  });

  it.each([
    ["js/app.js", "text/javascript; charset=utf-8", "export const a = 1;\n"],
    ["css/style.css", "text/css; charset=utf-8", "p{}"],
    ["img/logo@2x.png", "image/png", "png"],
    ["data.bin", "application/octet-stream", "?"],
  ])("serves %s as %s", async (file, type, body) => {
    const r = await get(asset(file));
    expect(r.status).toBe(200);
    expect(r.headers["content-type"]).toBe(type);
    expect(r.body).toBe(body);
  });

  it("answers HEAD with the same headers and no body", async () => {
    const r = await get(asset("js/app.js"), "HEAD");
    expect(r.status).toBe(200);
    expect(r.headers["content-length"]).toBe("20");
    expect(r.headers["content-security-policy"]).toBe(pluginProxyCsp(origins));
    expect(r.body).toBe("");
  });

  it("reads a bundle once, whatever is asked of it", async () => {
    for (const f of ["index.html", "js/app.js", "css/style.css"]) await get(asset(f));
    expect(reads.filter((r) => r.endsWith(bundleDigest))).toEqual([`${IMAGE} ${bundleDigest}`]);
  });

  it.each(["POST", "PUT", "PATCH", "DELETE", "OPTIONS"])("refuses %s (GET and HEAD only), with the CSP still on", async (method) => {
    const r = await get(asset("index.html"), method, method === "OPTIONS" ? { origin: "http://evil.test", "access-control-request-method": "GET" } : {});
    expect(r.status).toBe(405);
    expect(r.headers.allow).toBe("GET, HEAD");
    expect(r.headers["content-security-policy"]).toBe(pluginProxyCsp(origins));
    expect(r.headers["access-control-allow-origin"]).toBeUndefined();
  });
});

describe("a way out of the bundle, in any spelling", () => {
  it.each([
    "../../../../etc/passwd",
    "js/../../../console/index.html",
    "%2e%2e/%2e%2e/etc/passwd",
    "%2E%2E%2F%2E%2E%2Fetc%2Fpasswd",
    "..%2f..%2fetc%2fpasswd",
    "%252e%252e/etc/passwd",
    "..%5c..%5cetc%5cpasswd",
    "..\\..\\etc\\passwd",
    "js\\app.js",
    "%5c..%5capp.js",
    "index.html%00.js",
    "index.html%00",
    "%c0%ae%c0%ae/etc/passwd",
    "%e0%80%ae%e0%80%ae/etc/passwd",
    "%u002e%u002e/etc/passwd",
    "..;/etc/passwd",
    "./index.html",
    "js/./app.js",
    "js//app.js",
    "/etc/passwd",
    ".",
    "..",
    "js/app.js/",
    "%69ndex.html",
    "index%2ehtml",
  ])("refuses %s with 400 and serves nothing", async (rest) => {
    const r = await get(`/plugins/${PLUGIN}/${VERSION}/console/${rest}`);
    expect(r.status).toBe(400);
    expect(r.body).not.toContain("root:");
    expect(r.headers["content-security-policy"]).toBe(pluginProxyCsp(origins));
    expect(r.headers["cache-control"]).toBe("no-store");
  });

  it.each([
    [`/plugins/..%2f..%2f/${VERSION}/console/index.html`],
    [`/plugins/${PLUGIN}/..%2f/console/index.html`],
    [`/plugins/${PLUGIN}/${VERSION}/..%2fconsole/index.html`],
    [`/plugins/../plugins/${PLUGIN}/${VERSION}/console/index.html`],
    [`/plugins/${PLUGIN.toUpperCase()}/${VERSION}/console/index.html`],
    [`/plugins/${PLUGIN}/${VERSION.toUpperCase()}/console/index.html`],
    [`/plugins/${PLUGIN}/${VERSION.replace("sha256:", "sha256%3a")}/console/index.html`],
  ])("finds nothing at %s", async (path) => {
    const r = await get(path);
    expect(r.status).toBe(404);
  });
});

describe("which versions are served", () => {
  it.each([
    ["a plugin the log does not know", asset("index.html", "unknown-view")],
    ["another version of the view", asset("index.html", PLUGIN, `sha256:${"0".repeat(64)}`)],
    ["a view asked for but not decided (its image was never verified)", asset("index.html", "undecided")],
    ["a file the bundle does not hold", asset("missing.html")],
    ["the bundle's folder", `/plugins/${PLUGIN}/${VERSION}/console/`],
  ])("answers 404 for %s", async (_what, path) => {
    const r = await get(path);
    expect(r.status).toBe(404);
    expect(r.headers["cache-control"]).toBe("no-store");
  });

  it("answers 502 for a bundle whose bytes are not its digest, and says so in the log", async () => {
    const r = await get(asset("index.html", "forged-view"));
    expect(r.status).toBe(502);
    expect(r.body).not.toContain("forged");
    expect(log.lines().some((l) => l["msg"] === "plugin proxy: a UI bundle cannot be served" && l["plugin"] === "forged-view")).toBe(true);
  });

  it("stops serving a view once its Plugin is deleted and gone", async () => {
    await installView(store, "short-lived", { ...MANIFEST, ui: { bundle: bundleDigest, entry: "index.html" } } as unknown as JsonValue);
    expect((await get(asset("index.html", "short-lived"))).status).toBe(200);
    await store.append([{ stream: pluginStream("short-lived"), type: "plugin.deleted", actor: "owner:cli", data: { name: "short-lived" } }]);
    await decide(store, "short-lived");
    await store.append([{ stream: pluginStream("short-lived"), type: "workload.desired", actor: "reconciler", data: { name: "short-lived", running: false, objects: [], allowList: [] } }]);
    await store.append([{ stream: pluginStream("short-lived"), type: "workload.applied", actor: "reconciler", data: { name: "short-lived", target: "directory:/tmp/x", ok: true } }]);
    expect((await get(asset("index.html", "short-lived"))).status).toBe(404);
  });
});

describe("the browser SDK", () => {
  it("is served at its version as the shipped file, immutable, with the CSP", async () => {
    const r = await get("/plugins/sdk/0.1.0/sdk.js");
    expect(r.status).toBe(200);
    expect(r.body).toBe(SDK.toString("utf8"));
    expect(r.headers["content-type"]).toBe("text/javascript; charset=utf-8");
    expect(r.headers["cache-control"]).toBe("public, max-age=31536000, immutable");
    expect(r.headers["content-security-policy"]).toBe(pluginProxyCsp(origins));
  });

  it("has a context.js beside it naming this deployment's origins, revalidated on every load", async () => {
    const r = await get("/plugins/sdk/0.1.0/context.js");
    expect(r.status).toBe(200);
    expect(r.headers["cache-control"]).toBe("no-cache");
    expect(r.body).toContain(`export const CONSOLE_ORIGIN = "http://127.0.0.1:4780";`);
    expect(r.body).toContain(`export const PLUGIN_PROXY_ORIGIN = "http://${host}";`);
    expect(r.body).toContain(`export const GATEWAY_ORIGIN = "http://localhost:4782";`);
  });

  it.each(["/plugins/sdk/0.0.9/sdk.js", "/plugins/sdk/latest/sdk.js", "/plugins/sdk/0.1.0/other.js", "/plugins/sdk/0.1.0/sdk.js/x", "/plugins/sdk/0.1.0/console/index.html"])("finds nothing at %s", async (path) => {
    expect((await get(path)).status).toBe(404);
  });
});

describe("the rest of the origin", () => {
  it.each(["GET", "POST"])("keeps /csp-reports reserved (%s answers 501)", async (method) => {
    const r = await get("/csp-reports", method);
    expect(r.status).toBe(501);
  });

  it("refuses a request for another host (a rebound name would change what 'self' is)", async () => {
    const r = await call(`http://127.0.0.1:${port}`, "GET", asset("index.html"), { host: `evil.test:${port}` });
    expect(r.status).toBe(421);
    expect(r.body).not.toContain("<title>");
  });

  it("refuses a target longer than it reads", async () => {
    expect((await get(`/plugins/${"a".repeat(3000)}`)).status).toBe(414);
  });

  it("holds the installation routes behind the gateway's gates: a PluginToken of the installation, can_view", async () => {
    const inst = await new LogInstallations(store).byName(PLUGIN);
    if (inst === null) throw new Error("no installation");
    const { token } = await signPluginToken(t.signer, {
      sub: "alice", installation_id: inst.id, cluster_id: "embedded", plugin_name: inst.pluginName, plugin_version: inst.pluginVersion, definition_hash: inst.definitionHash, installation_name: PLUGIN,
    });
    const ok = await get(`/installations/${inst.id}/controller/status`, "GET", { authorization: `Bearer ${token}`, origin: origins.pluginProxy });
    expect(ok.status).toBe(200);
    expect(ok.json()).toMatchObject({ id: inst.id, state: "ready" });
    expect(ok.headers["access-control-allow-origin"]).toBe(origins.pluginProxy);
    expect((await get(`/installations/${inst.id}/controller/status`)).status).toBe(401);
  });

  it("answers anything else 404", async () => {
    expect((await get("/")).status).toBe(404);
    expect((await get("/clusters/embedded/api/v1/namespaces")).status).toBe(404);
  });

  it("counts its answers by outcome", async () => {
    const text = await registry.metrics();
    expect(text).toMatch(/openfief_plugin_proxy_requests_total\{outcome="served"\} [1-9]/);
    expect(text).toMatch(/openfief_plugin_proxy_requests_total\{outcome="bad_path"\} [1-9]/);
    expect(text).toMatch(/openfief_plugin_proxy_requests_total\{outcome="bundle_unusable"\} 1/);
  });
});
