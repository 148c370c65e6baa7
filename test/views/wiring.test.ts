/**
 * The views part as `openfief up` runs it, through real HTTP on 127.0.0.1: `startControlPlane`
 * on the signed demo with the key ring in the data folder (0600), the JWKS on the gateway's
 * origin, the mint (the use case, the JSON route and the Connect RPC, as a face mounts them), the
 * gateway in front of the embedded API, the plugin proxy serving ledger-view's real bundle from
 * the demo's OCI layout, the views' counters in the control plane's registry, an ordered stop.
 */
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { get } from "node:http";
import type { IncomingMessage } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Code, createClient } from "@connectrpc/connect";
import type { ConnectError } from "@connectrpc/connect";
import { connectNodeAdapter, createConnectTransport } from "@connectrpc/connect-node";
import { createLocalJWKSet, jwtVerify } from "jose";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { applyDemoFolder, deleteResource, demoSettings, JWKS_PATH, OWNER_CLI, VIEW_KEYS_FILE } from "../../src/app/index.js";
import { startControlPlane } from "../../src/compose/index.js";
import type { ControlPlane, RunningViews } from "../../src/compose/index.js";
import { TokenService } from "../../src/gen/openfief/auth/v1/token_pb.js";
import { LogInstallations, pluginProxyCsp, recentDecisions } from "../../src/views/index.js";
import type { MintCaller } from "../../src/views/index.js";
import { call, serve } from "./support.js";

let dir: string;
let cp: ControlPlane;
let views: RunningViews;
let installationId: string;

const PORT0 = { pluginProxyOrigin: "http://localhost:0", gatewayOrigin: "http://localhost:0" };
/** A request to one of the views' listeners, by its origin's name (`localhost:<port>`). */
const at = (origin: string, method: string, path: string, headers: Record<string, string> = {}, body?: string) => {
  const u = new URL(origin);
  return call(`http://127.0.0.1:${u.port}`, method, path, { host: u.host, ...headers }, body);
};

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "openfief-views-wiring-"));
  cp = await startControlPlane({ dataDir: join(dir, "data"), logger: pino({ level: "silent" }), settings: { ...demoSettings(), ...PORT0 }, egress: null, host: null, views: {} });
  if (cp.views === null) throw new Error("no views");
  views = cp.views;
  await applyDemoFolder(cp.runtime.store, "plugins");
  await cp.pass();
  installationId = (await new LogInstallations(cp.runtime.store).byName("ledger-view"))?.id ?? "";
}, 60_000);

afterAll(async () => {
  await cp?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const session = async (user = "alice") => (await cp.sessions.mintSession(user, "viewer")).token;
/** A script's call: the session in Authorization, no Origin. */
const bearer = (token: string): MintCaller => ({ authorization: `Bearer ${token}`, cookie: undefined, origin: undefined, secFetchSite: undefined });
const mint = async () => {
  const r = await views.mint(bearer(await session()), installationId);
  if (!r.ok) throw new Error(`mint refused: ${r.error.code}`);
  return r.value.token;
};

describe("the origins", () => {
  it("are three, the port 0 of each replaced by the one bound, the console's the default", () => {
    expect(views.origins.console).toBe("http://127.0.0.1:4780");
    expect(views.origins.pluginProxy).toMatch(/^http:\/\/localhost:[1-9][0-9]*$/);
    expect(views.origins.gateway).toMatch(/^http:\/\/localhost:[1-9][0-9]*$/);
    expect(views.origins.gateway).not.toBe(views.origins.pluginProxy);
    expect(views.gatewayUrl).toBe(`${views.origins.gateway}/clusters/embedded`);
    expect(views.listening.pluginProxy).toMatch(/^127\.0\.0\.1:/);
  });
});

describe("the key ring", () => {
  it("lives in the data folder, readable by its owner only", () => {
    const file = join(dir, "data", VIEW_KEYS_FILE);
    expect(existsSync(file)).toBe(true);
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });

  it("is published on the gateway's origin, and a minted PluginToken verifies against what is published", async () => {
    const r = await at(views.origins.gateway, "GET", JWKS_PATH);
    expect(r.status).toBe(200);
    expect(r.headers["content-type"]).toBe("application/jwk-set+json");
    const jwks = r.json() as { keys: Array<Record<string, unknown>> };
    expect(jwks.keys.length).toBeGreaterThan(0);
    for (const k of jwks.keys) expect(k["d"]).toBeUndefined();
    const { payload } = await jwtVerify(await mint(), createLocalJWKSet(jwks as never), { audience: "openfief-plugin", issuer: "openfief" });
    expect(payload).toMatchObject({ sub: "alice", installation_id: installationId, cluster_id: "embedded", installation_name: "ledger-view" });
  });
});

describe("the mint, as a face mounts it", () => {
  it("answers the JSON route with a token for a session, and 401 for a PluginToken", async () => {
    const s = await serve(views.mintJson());
    try {
      const ok = await call(s.url, "POST", "/mint", { "content-type": "application/json", authorization: `Bearer ${await session()}` }, JSON.stringify({ installationId }));
      expect(ok.status).toBe(200);
      expect(ok.json()).toMatchObject({ installationId });
      const again = await call(s.url, "POST", "/mint", { "content-type": "application/json", authorization: `Bearer ${String(ok.json()["token"])}` }, JSON.stringify({ installationId }));
      expect(again.status).toBe(401);
    } finally {
      await s.close();
    }
  });

  it("answers the Connect RPC for a session in Authorization", async () => {
    const s = await serve(connectNodeAdapter({ routes: views.connectRoutes }));
    try {
      const client = createClient(TokenService, createConnectTransport({ baseUrl: s.url, httpVersion: "1.1" }));
      const r = await client.mintPluginToken({ installationId }, { headers: { authorization: `Bearer ${await session()}` } });
      expect(r.installationId).toBe(installationId);
      const err = await client.mintPluginToken({ installationId }, {}).then(() => null, (e: unknown) => e);
      expect((err as ConnectError).code).toBe(Code.Unauthenticated);
    } finally {
      await s.close();
    }
  });
});

describe("the gateway on its origin", () => {
  const PLUGINS = "/clusters/embedded/apis/openfief.io/v1alpha1/namespaces/openfief/plugins";

  it("lists the control plane's plugins for the view, with CORS for the plugin proxy only", async () => {
    const r = await at(views.origins.gateway, "GET", PLUGINS, { authorization: `Bearer ${await mint()}`, origin: views.origins.pluginProxy });
    expect(r.status).toBe(200);
    expect(r.headers["access-control-allow-origin"]).toBe(views.origins.pluginProxy);
    const names = (r.json()["items"] as Array<{ metadata: { name: string } }>).map((i) => i.metadata.name).sort();
    expect(names).toEqual(["ecb-fx", "ledger-view", "nbp-fx"]);
  });

  it("refuses a request outside ledger-view's rules with 403, and records it in the log", async () => {
    const r = await at(views.origins.gateway, "GET", "/clusters/embedded/apis/openfief.io/v1alpha1/namespaces/openfief/events", { authorization: `Bearer ${await mint()}`, origin: views.origins.pluginProxy });
    expect(r.status).toBe(403);
    const [last] = await recentDecisions(cp.runtime.store, "ledger-view", 1);
    expect(last?.data).toMatchObject({ decision: "deny", gate: "plugin", user: "alice", attributes: { resource: "events", verb: "list" } });
  });

  it("answers a preflight from the plugin proxy, and none from another origin", async () => {
    const ok = await at(views.origins.gateway, "OPTIONS", PLUGINS, { origin: views.origins.pluginProxy, "access-control-request-method": "GET", "access-control-request-headers": "authorization" });
    expect(ok.status).toBe(204);
    const foreign = await at(views.origins.gateway, "OPTIONS", PLUGINS, { origin: "http://127.0.0.1:4780", "access-control-request-method": "GET" });
    expect(foreign.status).toBe(403);
    expect(foreign.headers["access-control-allow-origin"]).toBeUndefined();
  });
});

describe("the plugin proxy on its origin", () => {
  it("serves ledger-view's page from its signed bundle in the demo's layout, with the CSP of the bound origins", async () => {
    const inst = await views.mint(bearer(await session()), installationId);
    const version = inst.ok ? inst.value.installation.pluginVersion : "";
    const r = await at(views.origins.pluginProxy, "GET", `/plugins/ledger-view/${version}/console/index.html`);
    expect(r.status).toBe(200);
    expect(r.body).toContain('<script type="module" src="app.js"></script>');
    expect(r.headers["content-security-policy"]).toBe(pluginProxyCsp(views.origins));
    expect(r.headers["content-security-policy"]).toContain(`connect-src ${views.origins.gateway} ${views.origins.pluginProxy}`);
    const sdk = await at(views.origins.pluginProxy, "GET", "/plugins/sdk/0.1.0/sdk.js");
    expect(sdk.status).toBe(200);
    const context = await at(views.origins.pluginProxy, "GET", "/plugins/sdk/0.1.0/context.js");
    expect(context.body).toContain(JSON.stringify(views.origins.gateway));
  });
});

describe("the metrics", () => {
  it("count the views' mints, decisions and assets in the control plane's registry", async () => {
    const text = await cp.metrics.registry.metrics();
    expect(text).toMatch(/openfief_plugin_token_mints_total\{outcome="ok"\} [1-9]/);
    expect(text).toMatch(/openfief_gateway_decisions_total\{route="kube",decision="deny",gate="plugin"\} [1-9]/);
    expect(text).toMatch(/openfief_plugin_proxy_requests_total\{outcome="served"\} [1-9]/);
  });
});

describe("revoking the grant", () => {
  it("makes the next mint fail, and the gateway refuse a token minted before", async () => {
    const before = await mint();
    await deleteResource(cp.runtime.store, "grant", "ledger-view", OWNER_CLI);
    await cp.pass();
    const r = await views.mint(bearer(await session()), installationId);
    expect(r.ok === false && r.error).toMatchObject({ code: "failed_precondition", reason: "view_not_running" });
    const g = await at(views.origins.gateway, "GET", "/clusters/embedded/apis/openfief.io/v1alpha1/namespaces/openfief/plugins", { authorization: `Bearer ${before}` });
    expect(g.status).toBe(403);
    await applyDemoFolder(cp.runtime.store, "plugins");
    await cp.pass();
    expect((await views.mint(bearer(await session()), installationId)).ok).toBe(true);
  });
});

describe("starting and stopping", () => {
  it("keeps its keys across a restart: a token minted before still verifies after", async () => {
    const data = join(dir, "restart");
    const settings = { ...demoSettings(), ...PORT0 };
    const first = await startControlPlane({ dataDir: data, logger: pino({ level: "silent" }), settings, egress: null, host: null, views: {} });
    const kid = first.views?.ring.signingKid;
    await applyDemoFolder(first.runtime.store, "plugins");
    await first.pass();
    const v1 = first.views as RunningViews;
    const minted = await v1.mint(bearer((await first.sessions.mintSession("alice", "owner")).token), (await new LogInstallations(first.runtime.store).byName("ledger-view"))?.id);
    await first.stop();
    const second = await startControlPlane({ dataDir: data, logger: pino({ level: "silent" }), egress: null, host: null, views: {} });
    try {
      expect(second.views?.ring.signingKid).toBe(kid);
      const v2 = second.views as RunningViews;
      const r = await at(v2.origins.gateway, "GET", "/clusters/embedded/apis/openfief.io/v1alpha1/namespaces/openfief/plugins/ledger-view", { authorization: `Bearer ${minted.ok ? minted.value.token : ""}` });
      expect(r.status).toBe(200);
    } finally {
      await second.stop();
    }
  });

  it("ends an open watch and closes both listeners when the control plane stops", async () => {
    const data = join(dir, "stop");
    const c = await startControlPlane({ dataDir: data, logger: pino({ level: "silent" }), settings: { ...demoSettings(), ...PORT0 }, egress: null, host: null, views: {} });
    const v = c.views as RunningViews;
    await applyDemoFolder(c.runtime.store, "plugins");
    await c.pass();
    const id = await v.mint(bearer((await c.sessions.mintSession("alice", "owner")).token), (await new LogInstallations(c.runtime.store).byName("ledger-view"))?.id);
    if (!id.ok) throw new Error(id.error.code);
    const u = new URL(v.origins.gateway);
    const lines: string[] = [];
    const watch = await new Promise<IncomingMessage>((resolve, reject) => {
      get({ hostname: "127.0.0.1", port: Number(u.port), path: "/clusters/embedded/apis/openfief.io/v1alpha1/namespaces/openfief/plugins?watch=1", headers: { host: u.host, authorization: `Bearer ${id.value.token}` } }, resolve).on("error", reject);
    });
    expect(watch.statusCode).toBe(200);
    const ended = new Promise<void>((resolve) => watch.on("close", () => resolve()));
    watch.on("error", () => undefined);
    await new Promise<void>((resolve) => watch.on("data", (c: Buffer) => {
      lines.push(c.toString());
      resolve();
    }));
    expect(lines.join("")).toContain('"ADDED"');
    await c.stop();
    await ended;
    const after = await at(v.origins.pluginProxy, "GET", "/plugins/sdk/0.1.0/sdk.js").then(() => "answered", (e: unknown) => (e as NodeJS.ErrnoException).code);
    expect(after).toBe("ECONNREFUSED");
  });

  it("takes the gateway's limits from the data folder's settings, and keeps them for the next start", async () => {
    const data = join(dir, "limits");
    const settings = { ...demoSettings(), ...PORT0, gatewayLimits: { rate: { perUser: { perSecond: 0.01, burst: 2 } } }, egressRefusals: { perSource: 3 } };
    const c = await startControlPlane({ dataDir: data, logger: pino({ level: "silent" }), settings, egress: null, host: null, views: {} });
    try {
      await applyDemoFolder(c.runtime.store, "plugins");
      await c.pass();
      const v = c.views as RunningViews;
      const minted = await v.mint(bearer((await c.sessions.mintSession("alice", "owner")).token), (await new LogInstallations(c.runtime.store).byName("ledger-view"))?.id);
      const h = { authorization: `Bearer ${minted.ok ? minted.value.token : ""}` };
      const statuses = [];
      for (let i = 0; i < 3; i++) statuses.push((await at(v.origins.gateway, "GET", "/clusters/embedded/apis/openfief.io/v1alpha1/namespaces/openfief/plugins", h)).status);
      expect(statuses).toEqual([200, 200, 429]);
      const saved = JSON.parse(readFileSync(join(data, "settings.json"), "utf8")) as Record<string, unknown>;
      expect(saved).toMatchObject({ gatewayLimits: settings.gatewayLimits, egressRefusals: { perSource: 3 } });
    } finally {
      await c.stop();
    }
  });

  it.each([
    ["a limit that is not a number", { gatewayLimits: { watches: { total: "many" } } }, /gatewayLimits\.watches\.total must be a number/],
    ["a limit no gateway has", { gatewayLimits: { speed: 3 } }, /gatewayLimits\.speed is not a limit/],
    ["a limit out of range", { gatewayLimits: { refusals: { windowMs: 10 } } }, /windowMs must be a whole number of at least 1000/],
  ])("refuses %s in the settings", async (_what, given, message) => {
    const data = join(dir, `bad-limits-${Math.random().toString(36).slice(2)}`);
    await expect(startControlPlane({ dataDir: data, logger: pino({ level: "silent" }), settings: { ...PORT0, ...given } as never, egress: null, host: null, views: {} })).rejects.toThrow(message);
  });

  it.each([
    ["the plugin proxy on the console's site", { consoleOrigin: "http://127.0.0.1:4780", pluginProxyOrigin: "http://127.0.0.1:0" }, /different site from the console/],
    ["the gateway on the console's site", { consoleOrigin: "http://127.0.0.1:4780", gatewayOrigin: "http://127.0.0.1:0" }, /gateway \(http:\/\/127\.0\.0\.1:\d+\) must be a different site from the console/],
    ["the console on localhost beside views on localhost", { consoleOrigin: "http://localhost:4780" }, /must be a different site from the console \(http:\/\/localhost:4780\)/],
    ["an origin with a path", { pluginProxyOrigin: "http://localhost:0/plugins" }, /written as an origin/],
    ["a cluster ID that is no name", { clusterId: "Not A Name" }, /cluster ID/],
  ])("refuses %s, and lets the data folder go", async (_what, given, message) => {
    const data = join(dir, `bad-${Math.random().toString(36).slice(2)}`);
    const start = () => startControlPlane({ dataDir: data, logger: pino({ level: "silent" }), settings: { ...PORT0, ...given }, egress: null, host: null, views: {} });
    await expect(start()).rejects.toThrow(message);
    const ok = await startControlPlane({ dataDir: data, logger: pino({ level: "silent" }), settings: { ...PORT0, consoleOrigin: "http://127.0.0.1:4780", pluginProxyOrigin: "http://localhost:0", clusterId: "embedded" }, egress: null, host: null, views: {} });
    await ok.stop();
  });

  it("refuses a key file others may read", async () => {
    const data = join(dir, "loose-key");
    const c = await startControlPlane({ dataDir: data, logger: pino({ level: "silent" }), settings: PORT0, egress: null, host: null, views: {} });
    await c.stop();
    chmodSync(join(data, VIEW_KEYS_FILE), 0o644);
    await expect(startControlPlane({ dataDir: data, logger: pino({ level: "silent" }), egress: null, host: null, views: {} })).rejects.toThrow(/readable by others/);
  });
});
