/**
 * An installation's runtime and controller routes through real HTTP on 127.0.0.1: the runtime
 * route reaches the plugin's pod with the core's token (D-59), never the PluginToken; both routes
 * need a PluginToken of the installation in the URL and can_view.
 */
import type { IncomingHttpHeaders } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { gatewayStream } from "../../src/events/index.js";
import type { EventLog } from "../../src/events/index.js";
import { EmbeddedUpstream, LogInstallations, StoreDecisionRecorder, createGateway, createInstallationRoutes, rbacViewAccess, signPluginToken } from "../../src/views/index.js";
import type { PluginTokenClaims } from "../../src/views/index.js";
import { PLUGIN, PLUGIN_PROXY, ROLES, call, installView, serve, tempStore, tokens } from "./support.js";

let store: EventLog;
let cleanup: () => Promise<void>;
let t: Awaited<ReturnType<typeof tokens>>;
let gw: Awaited<ReturnType<typeof serve>>;
let runtime: Awaited<ReturnType<typeof serve>>;
let claims: PluginTokenClaims;
const seen: Array<{ method: string; url: string; headers: IncomingHttpHeaders; body: string }> = [];

beforeAll(async () => {
  ({ store, cleanup } = await tempStore());
  t = await tokens();
  await installView(store);
  runtime = await serve((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      seen.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers, body: Buffer.concat(chunks).toString() });
      res.writeHead(201, { "content-type": "text/plain", "set-cookie": "tracker=1" });
      res.end("from the plugin");
    });
  });
  const installations = new LogInstallations(store);
  const inst = await installations.byName(PLUGIN);
  if (inst === null) throw new Error("installation");
  claims = { sub: "alice", installation_id: inst.id, cluster_id: "embedded", plugin_name: inst.pluginName, plugin_version: inst.pluginVersion, definition_hash: inst.definitionHash, installation_name: PLUGIN };
  const gateway = createGateway({
    clusterId: "embedded", tokens: t.plugins, installations, access: rbacViewAccess(ROLES), upstream: new EmbeddedUpstream(store, ROLES), recorder: new StoreDecisionRecorder(store), pluginProxyOrigin: PLUGIN_PROXY,
    installationRoutes: createInstallationRoutes({ runtime: async (i) => (i.name === PLUGIN ? { baseUrl: runtime.url, token: async () => "core-token-for-ledger-view" } : null) }),
  });
  gw = await serve(() => {}, (server) => gateway.attach(server));
});

afterAll(async () => {
  await gw.close();
  await runtime.close();
  await cleanup();
});

const token = async (over: Partial<PluginTokenClaims> = {}): Promise<string> => (await signPluginToken(t.signer, { ...claims, ...over })).token;

describe("the runtime route", () => {
  it("reaches the plugin's pod with the core's token, the path and body as sent", async () => {
    const pluginToken = await token();
    const r = await call(gw.url, "POST", `/installations/${claims.installation_id}/runtime/api/items?page=2`, { authorization: `Bearer ${pluginToken}`, "content-type": "application/json", origin: PLUGIN_PROXY }, '{"a":1}');
    expect(r.status).toBe(201);
    expect(r.body).toBe("from the plugin");
    expect(r.headers["set-cookie"]).toBeUndefined();
    expect(r.headers["access-control-allow-origin"]).toBe(PLUGIN_PROXY);
    const last = seen.at(-1);
    expect(last).toMatchObject({ method: "POST", url: "/api/items?page=2", body: '{"a":1}' });
    expect(last?.headers["authorization"]).toBe("Bearer core-token-for-ledger-view");
    expect(JSON.stringify(last?.headers)).not.toContain(pluginToken);
    expect((await store.last(gatewayStream(PLUGIN), "gateway.decision"))?.data).toMatchObject({ route: "runtime", decision: "allow", path: "/api/items" });
  });

  it.each([
    { name: "no token", headers: async (): Promise<Record<string, string>> => ({}), path: () => `/installations/${claims.installation_id}/runtime/x`, status: 401 },
    { name: "a token of another installation", headers: async () => ({ authorization: `Bearer ${await token()}` }), path: () => `/installations/other.4/runtime/x`, status: 403 },
    { name: "a user who may not view the plugin", headers: async () => ({ authorization: `Bearer ${await token({ sub: "bob" })}` }), path: () => `/installations/${claims.installation_id}/runtime/x`, status: 403 },
    { name: "a path that is neither route", headers: async () => ({ authorization: `Bearer ${await token()}` }), path: () => `/installations/${claims.installation_id}/secrets`, status: 404 },
  ])("refuses $name with $status, never reaching the pod", async ({ headers, path, status }) => {
    const before = seen.length;
    const r = await call(gw.url, "GET", path(), await headers());
    expect(r.status).toBe(status);
    expect(seen.length).toBe(before);
  });
});

describe("a path the pod must never see", () => {
  it.each([
    ["a dot-dot segment", "/runtime/../x"],
    ["an encoded dot-dot segment", "/runtime/%2e%2e/x"],
    ["a mixed-case encoded dot-dot segment", "/runtime/.%2E/x"],
    ["a dot segment", "/runtime/./x"],
    ["an encoded separator hiding a dot-dot", "/runtime/a%2F..%2Fx"],
    ["an encoded backslash", "/runtime/a%5C..%5Cx"],
    ["no path after the route", "/runtime"],
    ["only a query after the route", "/runtime?x=1"],
    ["the controller route with no path", "/controller"],
  ])("is 404 before any gate: %s", async (_what, tail) => {
    const before = { seen: seen.length, decisions: await store.version(gatewayStream(PLUGIN)) };
    // No token at all: the route is refused before the token is looked at.
    const bare = await call(gw.url, "GET", `/installations/${claims.installation_id}${tail}`);
    const withToken = await call(gw.url, "GET", `/installations/${claims.installation_id}${tail}`, { authorization: `Bearer ${await token()}` });
    expect([bare.status, withToken.status]).toEqual([404, 404]);
    expect(seen.length).toBe(before.seen);
    expect(await store.version(gatewayStream(PLUGIN))).toBe(before.decisions);
  });

  it("reaches the pod as sent when it is clean, encoded characters and all", async () => {
    const r = await call(gw.url, "GET", `/installations/${claims.installation_id}/runtime/items/a%20b/..x/x..?q=..`, { authorization: `Bearer ${await token()}` });
    expect(r.status).toBe(201);
    expect(seen.at(-1)?.url).toBe("/items/a%20b/..x/x..?q=..");
  });
});

describe("the controller route", () => {
  it("shows the installation's status, with its effective rules", async () => {
    const r = await call(gw.url, "GET", `/installations/${claims.installation_id}/controller/status`, { authorization: `Bearer ${await token()}` });
    expect(r.status).toBe(200);
    expect(r.json()).toMatchObject({ id: claims.installation_id, state: "ready", serviceAccount: "openfief/plugin-ledger-view" });
    expect((r.json()["rules"] as unknown[]).length).toBeGreaterThan(0);
  });

  it("is read-only", async () => {
    const r = await call(gw.url, "DELETE", `/installations/${claims.installation_id}/controller/status`, { authorization: `Bearer ${await token()}` });
    expect(r.status).toBe(405);
  });
});
