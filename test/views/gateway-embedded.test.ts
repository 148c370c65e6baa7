/**
 * The gateway in the embedded default mode, through real HTTP on 127.0.0.1: every gate's status
 * in FUN-17's order, each decision recorded (and a refused token not), CORS, the embedded
 * resources, resourceNames through field selectors, and a watch that passes through.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { Registry } from "prom-client";
import { gatewayStream, pluginStream } from "../../src/events/index.js";
import type { EventLog } from "../../src/events/index.js";
import {
  EmbeddedUpstream,
  LogInstallations,
  StoreDecisionRecorder,
  ViewMetrics,
  createGateway,
  createInstallationRoutes,
  rbacViewAccess,
  recentDecisions,
  signPluginToken,
  summarizeDecisions,
} from "../../src/views/index.js";
import type { DecisionRecorder, PluginTokenClaims } from "../../src/views/index.js";
import { PLUGIN, PLUGIN_PROXY, ROLES, call, capturedLogger, installView, serve, stream, tempStore, tokens } from "./support.js";

let store: EventLog;
let cleanup: () => Promise<void>;
let t: Awaited<ReturnType<typeof tokens>>;
let gw: Awaited<ReturnType<typeof serve>>;
let claims: PluginTokenClaims;
let registry: Registry;
let recorder: DecisionRecorder;
let failRecording = false;
const log = capturedLogger();

beforeAll(async () => {
  ({ store, cleanup } = await tempStore());
  t = await tokens();
  await installView(store);
  const installations = new LogInstallations(store);
  const inst = await installations.byName(PLUGIN);
  if (inst === null) throw new Error("no installation");
  claims = { sub: "alice", installation_id: inst.id, cluster_id: "embedded", plugin_name: inst.pluginName, plugin_version: inst.pluginVersion, definition_hash: inst.definitionHash, installation_name: PLUGIN };
  registry = new Registry();
  const real = new StoreDecisionRecorder(store);
  recorder = { record: async (d) => { if (failRecording) throw new Error("disk full"); await real.record(d); }, recordRefusals: (r) => real.recordRefusals(r) };
  const gateway = createGateway({
    clusterId: "embedded", tokens: t.plugins, installations, access: rbacViewAccess(ROLES), upstream: new EmbeddedUpstream(store, ROLES),
    installationRoutes: createInstallationRoutes(), recorder, pluginProxyOrigin: PLUGIN_PROXY, logger: log.logger, metrics: new ViewMetrics(registry),
  });
  gw = await serve(() => {}, (server) => gateway.attach(server));
});

afterAll(async () => {
  await gw.close();
  await cleanup();
});

beforeEach(() => { failRecording = false; });

async function token(over: Partial<PluginTokenClaims> = {}): Promise<string> {
  return (await signPluginToken(t.signer, { ...claims, ...over })).token;
}

const auth = async (over: Partial<PluginTokenClaims> = {}): Promise<Record<string, string>> => ({ authorization: `Bearer ${await token(over)}` });
const PLUGINS = "/clusters/embedded/apis/openfief.io/v1alpha1/namespaces/openfief/plugins";

async function lastDecision(): Promise<Record<string, unknown> | undefined> {
  return (await store.last(gatewayStream(PLUGIN), "gateway.decision"))?.data as Record<string, unknown> | undefined;
}

describe("the gates, in FUN-17's order", () => {
  it.each([
    { name: "no token", path: PLUGINS, headers: async () => ({}), status: 401, recorded: false },
    { name: "a session token instead of a PluginToken", path: PLUGINS, headers: async () => ({ authorization: `Bearer ${await t.session("alice")}` }), status: 401, recorded: false },
    { name: "a foreign origin", path: PLUGINS, headers: async () => ({ ...(await auth()), origin: "http://127.0.0.1:9" }), status: 403, gate: "origin" },
    { name: "a token bound to another cluster", path: PLUGINS, headers: async () => auth({ cluster_id: "prod" }), status: 403, gate: "cluster" },
    { name: "a cluster this gateway does not front", path: PLUGINS.replace("/clusters/embedded", "/clusters/prod"), headers: async () => auth({ cluster_id: "prod" }), status: 404, gate: "cluster" },
    { name: "a user who may not view the plugin", path: PLUGINS, headers: async () => auth({ sub: "bob" }), status: 403, gate: "can_view" },
    { name: "an installation that is gone", path: PLUGINS, headers: async () => auth({ installation_id: `${PLUGIN}.9999` }), status: 404, gate: "installation" },
    { name: "a request kube-apiserver cannot resolve", path: "/clusters/embedded/api/v1/watch", headers: async () => auth(), status: 400, gate: "request" },
    { name: "a path that is not Go's URL", path: "/clusters/embedded/api/v1/pods/%zz", headers: async () => auth(), status: 400, gate: "request" },
    { name: "impersonation", path: PLUGINS, headers: async () => ({ ...(await auth()), "impersonate-user": "admin" }), status: 400, gate: "request" },
    { name: "a user whose roles refuse it", path: "/clusters/embedded/apis/openfief.io/v1alpha1/namespaces/openfief/plugins", headers: async () => auth({ sub: "carol" }), status: 403, gate: "user" },
    { name: "a request outside the plugin's rules", path: "/clusters/embedded/apis/openfief.io/v1alpha1/namespaces/openfief/events", headers: async () => auth(), status: 403, gate: "plugin" },
  ])("refuses $name with $status", async ({ path, headers, status, gate, recorded }) => {
    const before = await store.version(gatewayStream(PLUGIN));
    if (gate === "user") {
      // carol may view only "other": give her a token of her own for a plugin she may view.
      await installView(store, "other");
      const inst = await new LogInstallations(store).byName("other");
      const h = { authorization: `Bearer ${await token({ sub: "carol", installation_id: inst?.id ?? "", installation_name: "other" })}` };
      const r = await call(gw.url, "GET", path, h);
      expect(r.status).toBe(status);
      expect((await store.last(gatewayStream("other"), "gateway.decision"))?.data).toMatchObject({ decision: "deny", gate, status, user: "carol" });
      return;
    }
    const r = await call(gw.url, "GET", path, await headers());
    expect(r.status).toBe(status);
    expect(r.json()).toMatchObject({ kind: "Status", code: status });
    if (recorded === false) {
      expect(await store.version(gatewayStream(PLUGIN))).toBe(before);
      return;
    }
    expect(await store.version(gatewayStream(PLUGIN))).toBe(before + 1);
    expect(await lastDecision()).toMatchObject({ decision: "deny", gate, status });
  });

  it("records a request outside the plugin's rules with everything FUN-17's audit line has", async () => {
    const r = await call(gw.url, "GET", "/clusters/embedded/apis/openfief.io/v1alpha1/namespaces/openfief/events?limit=5", await auth());
    expect(r.status).toBe(403);
    expect(r.headers["audit-id"]).toMatch(/^[0-9a-f-]{36}$/);
    expect(await lastDecision()).toEqual({
      requestId: r.headers["audit-id"], route: "kube", user: "alice", installation: claims.installation_id, installationName: PLUGIN, plugin: claims.plugin_name, version: claims.plugin_version,
      definitionHash: claims.definition_hash, pinnedHash: claims.definition_hash, cluster: "embedded", method: "GET",
      path: "/apis/openfief.io/v1alpha1/namespaces/openfief/events",
      attributes: { kind: "resource", verb: "list", apiGroup: "openfief.io", apiVersion: "v1alpha1", namespace: "openfief", resource: "events", subresource: "", name: "", fieldSelector: "", labelSelector: "" },
      decision: "deny", gate: "plugin", status: 403, reason: "no_rule", rules: 1,
    });
  });

  it("logs and counts a refused token, without the token", async () => {
    await call(gw.url, "GET", PLUGINS, { authorization: "Bearer abc.def.ghi" });
    expect(log.lines().some((l) => l["msg"] === "gateway: request" && l["gate"] === "token" && l["reason"] === "malformed" && l["status"] === 401)).toBe(true);
    expect(JSON.stringify(log.lines())).not.toContain("abc.def.ghi");
    expect(await registry.metrics()).toMatch(/openfief_gateway_tokens_refused_total\{problem="malformed"\} [1-9]/);
  });

  it("refuses when the token's user loses can_view, at the next request", async () => {
    const r = await call(gw.url, "GET", PLUGINS, await auth({ sub: "nobody" }));
    expect(r.status).toBe(403);
    expect(await lastDecision()).toMatchObject({ gate: "can_view", user: "nobody" });
  });

  it("refuses to forward what it cannot record (503)", async () => {
    failRecording = true;
    const r = await call(gw.url, "GET", PLUGINS, await auth());
    expect(r.status).toBe(503);
    expect(r.body).not.toContain("ledger-view@");
  });
});

describe("the embedded resources", () => {
  it("lists plugins, recording the allow before answering", async () => {
    const r = await call(gw.url, "GET", PLUGINS, await auth());
    expect(r.status).toBe(200);
    const list = r.json();
    expect(list).toMatchObject({ apiVersion: "openfief.io/v1alpha1", kind: "PluginList" });
    expect((list["items"] as Array<{ metadata: { name: string } }>).map((i) => i.metadata.name)).toContain(PLUGIN);
    expect(await lastDecision()).toMatchObject({ decision: "allow", gate: "upstream", status: null, attributes: { verb: "list", resource: "plugins" } });
  });

  it("gets one plugin, and answers 404 as kube-apiserver words it", async () => {
    const one = await call(gw.url, "GET", `${PLUGINS}/${PLUGIN}`, await auth());
    expect(one.json()).toMatchObject({ kind: "Plugin", metadata: { name: PLUGIN, namespace: "openfief", uid: claims.installation_id }, status: { view: "ready" } });
    const none = await call(gw.url, "GET", `${PLUGINS}/nothing`, await auth());
    expect(none.status).toBe(404);
    expect(none.json()).toMatchObject({ reason: "NotFound", message: 'plugins.openfief.io "nothing" not found' });
  });

  it.each([
    { name: "a plain list, which a named rule never allows", query: "", status: 403 },
    { name: "a list named by a field selector", query: `?fieldSelector=metadata.name%3D${PLUGIN}`, status: 200 },
    { name: "a list naming another grant", query: "?fieldSelector=metadata.name%3Dother", status: 403 },
    { name: "a list whose field selector does not parse", query: `?fieldSelector=metadata.name%3D${PLUGIN},x`, status: 403 },
  ])("serves plugingrants only by name: $name is $status", async ({ query, status }) => {
    const r = await call(gw.url, "GET", `/clusters/embedded/apis/openfief.io/v1alpha1/namespaces/openfief/plugingrants${query}`, await auth());
    expect(r.status).toBe(status);
    if (status === 200) expect((r.json()["items"] as Array<{ metadata: { name: string } }>).map((i) => i.metadata.name)).toEqual([PLUGIN]);
  });

  it("serves discovery as non-resource URLs", async () => {
    const r = await call(gw.url, "GET", "/clusters/embedded/apis/openfief.io/v1alpha1", await auth());
    expect(r.json()).toMatchObject({ kind: "APIResourceList", groupVersion: "openfief.io/v1alpha1" });
  });

  it("is read-only", async () => {
    // The manifest grants no write, so the plugin gate refuses first; the user's roles too.
    const r = await call(gw.url, "DELETE", `${PLUGINS}/${PLUGIN}`, await auth());
    expect(r.status).toBe(403);
  });

  it("answers HEAD without a body", async () => {
    const r = await call(gw.url, "HEAD", `${PLUGINS}/${PLUGIN}`, await auth());
    expect(r.status).toBe(200);
    expect(r.body).toBe("");
  });
});

describe("a watch", () => {
  it("passes through, authorised at its start", async () => {
    const w = stream(gw.url, `${PLUGINS}?watch=true`, await auth());
    expect(await w.status).toBe(200);
    const first = await w.next(1);
    expect(JSON.parse(first[0] as string)).toMatchObject({ type: "ADDED", object: { kind: "Plugin" } });
    const decisions = await store.version(gatewayStream(PLUGIN));
    await store.append([{ stream: pluginStream("fresh"), type: "plugin.observed", actor: "owner:cli", data: { name: "fresh", spec: { image: "x", manifest: {} } } }]);
    const line = await w.waitFor((l) => l.includes('"name":"fresh"'));
    w.close();
    expect(JSON.parse(line)).toMatchObject({ type: "ADDED", object: { metadata: { name: "fresh" } } });
    // One decision for the whole stream.
    expect(await store.version(gatewayStream(PLUGIN))).toBe(decisions);
  });

  it("of one object by field selector sees only that object", async () => {
    const w = stream(gw.url, `${PLUGINS}?watch=1&fieldSelector=metadata.name%3Dlater`, await auth());
    expect(await w.status).toBe(200);
    await store.append([{ stream: pluginStream("noise"), type: "plugin.observed", actor: "owner:cli", data: { name: "noise", spec: { image: "x", manifest: {} } } }]);
    await store.append([{ stream: pluginStream("later"), type: "plugin.observed", actor: "owner:cli", data: { name: "later", spec: { image: "x", manifest: {} } } }]);
    const [line] = await w.next(1);
    w.close();
    expect(JSON.parse(line as string)).toMatchObject({ type: "ADDED", object: { metadata: { name: "later" } } });
  });
});

describe("CORS", () => {
  it("answers the plugin proxy's preflight with FUN-17's policy", async () => {
    const r = await call(gw.url, "OPTIONS", PLUGINS, { origin: PLUGIN_PROXY, "access-control-request-method": "GET", "access-control-request-headers": "authorization" });
    expect(r.status).toBe(204);
    expect(r.headers["access-control-allow-origin"]).toBe(PLUGIN_PROXY);
    expect(r.headers["access-control-allow-headers"]).toBe("Authorization, Content-Type");
    expect(r.headers["access-control-allow-methods"]).toBe("GET, HEAD, POST, PUT, PATCH, DELETE");
    expect(r.headers["access-control-allow-credentials"]).toBeUndefined();
    expect(r.headers["vary"]).toBe("Origin");
  });

  it("refuses any other origin's preflight with no CORS header at all", async () => {
    const r = await call(gw.url, "OPTIONS", PLUGINS, { origin: "http://127.0.0.1:9", "access-control-request-method": "GET" });
    expect(r.status).toBe(403);
    expect(Object.keys(r.headers).filter((h) => h.startsWith("access-control-"))).toEqual([]);
  });

  it("lets the plugin proxy read answers, credentials off", async () => {
    const r = await call(gw.url, "GET", PLUGINS, { ...(await auth()), origin: PLUGIN_PROXY });
    expect(r.status).toBe(200);
    expect(r.headers["access-control-allow-origin"]).toBe(PLUGIN_PROXY);
    expect(r.headers["access-control-allow-credentials"]).toBeUndefined();
  });

  it("lets the plugin proxy read refusals too", async () => {
    const r = await call(gw.url, "GET", PLUGINS, { origin: PLUGIN_PROXY });
    expect(r.status).toBe(401);
    expect(r.headers["access-control-allow-origin"]).toBe(PLUGIN_PROXY);
  });
});

describe("the installation routes", () => {
  const base = (): string => `/installations/${claims.installation_id}`;

  it("show the controller's status of the token's installation", async () => {
    const r = await call(gw.url, "GET", `${base()}/controller/status`, await auth());
    expect(r.status).toBe(200);
    expect(r.json()).toMatchObject({ id: claims.installation_id, name: PLUGIN, state: "ready", definitionHash: claims.definition_hash });
    expect(await lastDecision()).toMatchObject({ route: "controller", decision: "allow", gate: "upstream", attributes: null });
  });

  it.each([
    { name: "a token of another installation", path: () => `/installations/other.1/controller/status`, over: {}, status: 403, gate: "installation" },
    { name: "a user who may not view it", path: () => `${base()}/controller/status`, over: { sub: "bob" }, status: 403, gate: "can_view" },
    { name: "no runtime to reach", path: () => `${base()}/runtime/`, over: {}, status: 503, gate: "upstream" },
  ])("refuse $name with $status", async ({ path, over, status, gate }) => {
    const r = await call(gw.url, "GET", path(), await auth(over));
    expect(r.status).toBe(status);
    if (gate !== "upstream") expect(await lastDecision()).toMatchObject({ route: path().includes("runtime") ? "runtime" : "controller", decision: "deny", gate, status });
  });
});

describe("recent decisions", () => {
  it("come newest first, summarised by gate", async () => {
    const recent = await recentDecisions(store, PLUGIN, 1000);
    expect(recent.length).toBeGreaterThan(5);
    expect(recent[0]?.seq).toBeGreaterThan(recent[1]?.seq ?? Infinity);
    const s = summarizeDecisions(recent);
    expect(s.allowed + s.denied).toBe(recent.length);
    expect(s.deniedBy.plugin).toBeGreaterThan(0);
    expect(s.deniedBy.cluster).toBeGreaterThan(0);
  });
});
