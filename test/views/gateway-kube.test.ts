/**
 * The gateway in front of a Kubernetes API (the fake API server on 127.0.0.1, which answers
 * SubjectAccessReviews and TokenRequests and enforces RBAC on the tokens it issues): the user's
 * review, the plugin ServiceAccount's review against the ClusterRole compiled from the effective
 * rules, the ServiceAccount's own token on the wire (never the user's or the PluginToken), its
 * cache, a watch and an exec upgrade that pass through.
 */
import { connect as netConnect } from "node:net";
import type { Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { gatewayStream } from "../../src/events/index.js";
import type { EventLog } from "../../src/events/index.js";
import { buildObjects, compile, effective, objectToJSON, parseGrant, parseImageRef, parseManifest } from "../../src/plugins/index.js";
import type { PolicyRuleJSON } from "../../src/plugins/index.js";
import {
  KubeUpstream,
  LogInstallations,
  StoreDecisionRecorder,
  WEBSOCKET_TOKEN_PROTOCOL,
  createGateway,
  rbacViewAccess,
  signPluginToken,
} from "../../src/views/index.js";
import type { PluginTokenClaims } from "../../src/views/index.js";
import { FakeApiServer } from "../kube/fake-apiserver.js";
import { GRANT, IMAGE, MANIFEST, PLUGIN, PLUGIN_PROXY, ROLES, call, installView, serve, stream, tempStore, tokens } from "./support.js";

let store: EventLog;
let cleanup: () => Promise<void>;
let t: Awaited<ReturnType<typeof tokens>>;
let fake: FakeApiServer;
let gw: Awaited<ReturnType<typeof serve>>;
let upstream: KubeUpstream;
let claims: PluginTokenClaims;
let now = Date.now();

function userRole(name: string, user: string, rules: PolicyRuleJSON[]): void {
  fake.put({ apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRole", metadata: { name }, rules });
  fake.put({ apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRoleBinding", metadata: { name }, roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name }, subjects: [{ kind: "User", name: user }] });
}

beforeAll(async () => {
  ({ store, cleanup } = await tempStore());
  t = await tokens();
  fake = await FakeApiServer.start();
  await installView(store);
  // The cluster holds what the operator applies: the ServiceAccount and the scope compiled from the effective rules.
  const m = parseManifest(MANIFEST);
  const g = parseGrant({ name: PLUGIN, spec: GRANT });
  const img = parseImageRef(IMAGE);
  if (!m.ok || !g.ok || !img.ok) throw new Error("parse");
  const e = effective(m.value, g.value.spec);
  if (!e.ok) throw new Error("effective");
  const w = compile({ name: PLUGIN, image: img.value }, e.value, {
    core: { clusterIP: "10.0.0.1", port: 8080, podPort: 8080, podLabels: { app: "core" } }, proxy: { clusterIP: "10.0.0.2", podPort: 4750, podLabels: { app: "egress" } },
    pluginPort: 9090, coreSubject: "system:serviceaccount:openfief:openfief-core",
  });
  if (!w.ok) throw new Error("compile");
  const objects = buildObjects(w.value);
  for (const o of [objects.serviceAccount, objects.clusterRole, objects.clusterRoleBinding]) fake.put(objectToJSON(o as never));
  userRole("alice-reads", "openfief:user:alice", [
    { apiGroups: [""], resources: ["configmaps", "pods", "pods/log", "services"], verbs: ["get", "list", "watch"] },
    { apiGroups: [""], resources: ["pods/exec"], verbs: ["get", "create"] },
  ]);
  fake.put({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "settings", namespace: "openfief" }, data: { a: "1" } });

  upstream = new KubeUpstream({ endpoint: { baseUrl: fake.url }, credentials: async () => "operator-token", clock: () => now });
  const installations = new LogInstallations(store);
  const inst = await installations.byName(PLUGIN);
  if (inst === null) throw new Error("installation");
  claims = { sub: "alice", installation_id: inst.id, cluster_id: "c1", plugin_name: inst.pluginName, plugin_version: inst.pluginVersion, definition_hash: inst.definitionHash, installation_name: PLUGIN };
  const gateway = createGateway({ clusterId: "c1", tokens: t.plugins, installations, access: rbacViewAccess(ROLES), upstream, recorder: new StoreDecisionRecorder(store), pluginProxyOrigin: PLUGIN_PROXY });
  gw = await serve(() => {}, (server) => gateway.attach(server));
});

afterAll(async () => {
  await gw.close();
  await fake.close();
  await cleanup();
});

async function pluginToken(over: Partial<PluginTokenClaims> = {}): Promise<string> {
  return (await signPluginToken(t.signer, { ...claims, ...over })).token;
}

const CONFIGMAPS = "/clusters/c1/api/v1/namespaces/openfief/configmaps";
const lastDecision = async (): Promise<Record<string, unknown> | undefined> => (await store.last(gatewayStream(PLUGIN), "gateway.decision"))?.data as Record<string, unknown> | undefined;

describe("a request both halves allow", () => {
  it("is reviewed for the user, then for the plugin's ServiceAccount, then sent with that ServiceAccount's own token", async () => {
    const token = await pluginToken();
    const before = fake.requests.length;
    const r = await call(gw.url, "GET", CONFIGMAPS, { authorization: `Bearer ${token}`, cookie: "session=secret", origin: PLUGIN_PROXY });
    expect(r.status).toBe(200);
    expect((r.json()["items"] as Array<{ metadata: { name: string } }>).map((i) => i.metadata.name)).toEqual(["settings"]);
    const seen = fake.requests.slice(before);
    const sar = seen.filter((q) => q.path === "/apis/authorization.k8s.io/v1/subjectaccessreviews").map((q) => (q.body as { spec: Record<string, unknown> }).spec);
    expect(sar.map((s) => s["user"])).toEqual(["openfief:user:alice", "system:serviceaccount:openfief:plugin-ledger-view"]);
    expect(sar[0]?.["resourceAttributes"]).toEqual({ namespace: "openfief", verb: "list", group: "", version: "v1", resource: "configmaps", subresource: "", name: "" });
    const forwarded = seen.find((q) => q.method === "GET" && q.path === "/api/v1/namespaces/openfief/configmaps");
    expect(forwarded?.client).toMatch(/^fake-sa\.openfief\.plugin-ledger-view\./);
    expect(forwarded?.headers["cookie"]).toBeUndefined();
    expect(forwarded?.headers["origin"]).toBeUndefined();
    // Neither the PluginToken nor any session ever reaches the cluster.
    expect(fake.requests.some((q) => q.client === token || JSON.stringify(q.headers).includes(token))).toBe(false);
    expect(r.headers["access-control-allow-origin"]).toBe(PLUGIN_PROXY);
    expect(await lastDecision()).toMatchObject({ decision: "allow", gate: "upstream", cluster: "c1", attributes: { verb: "list", resource: "configmaps" } });
  });

  it("asks for a 900-second ServiceAccount token once and reuses it until a fifth of its life is left", async () => {
    const first = upstream.tokenRequests;
    const requests = fake.requestsTo("POST", "/api/v1/namespaces/openfief/serviceaccounts/plugin-ledger-view/token");
    expect((requests[0]?.body as { spec: { expirationSeconds: number } }).spec.expirationSeconds).toBe(900);
    const auth = { authorization: `Bearer ${await pluginToken()}` };
    expect((await call(gw.url, "GET", CONFIGMAPS, auth)).status).toBe(200);
    expect(upstream.tokenRequests).toBe(first);
    now += 700_000;
    expect((await call(gw.url, "GET", CONFIGMAPS, auth)).status).toBe(200);
    expect(upstream.tokenRequests).toBe(first);
    now += 30_000;
    expect((await call(gw.url, "GET", `${CONFIGMAPS}/settings`, { authorization: `Bearer ${await pluginToken()}` })).status).toBe(200);
    expect(upstream.tokenRequests).toBe(first + 1);
  });
});

describe("a request one half refuses", () => {
  it("is refused at the user's review when the user may not (403, recorded), and nothing is forwarded", async () => {
    const before = fake.requests.length;
    const r = await call(gw.url, "GET", "/clusters/c1/apis/openfief.io/v1alpha1/namespaces/openfief/plugins", { authorization: `Bearer ${await pluginToken()}` });
    expect(r.status).toBe(403);
    expect(await lastDecision()).toMatchObject({ decision: "deny", gate: "user", status: 403 });
    expect(fake.requests.slice(before).map((q) => q.path)).toEqual(["/apis/authorization.k8s.io/v1/subjectaccessreviews"]);
  });

  it("is refused at the plugin's review when the user may but the plugin's rules do not (403, recorded)", async () => {
    const before = fake.requests.length;
    const r = await call(gw.url, "GET", "/clusters/c1/api/v1/namespaces/openfief/services", { authorization: `Bearer ${await pluginToken()}` });
    expect(r.status).toBe(403);
    expect(await lastDecision()).toMatchObject({ decision: "deny", gate: "plugin", status: 403, attributes: { resource: "services", verb: "list" } });
    expect(fake.requests.slice(before).every((q) => q.path === "/apis/authorization.k8s.io/v1/subjectaccessreviews")).toBe(true);
  });

  it("is refused, failing closed, when the review cannot be made (503)", async () => {
    const saved = fake.accessReviewer;
    fake.accessReviewer = () => { throw new Error("etcd down"); };
    const r = await call(gw.url, "GET", CONFIGMAPS, { authorization: `Bearer ${await pluginToken()}` });
    fake.accessReviewer = saved;
    expect(r.status).toBe(503);
    expect(await lastDecision()).toMatchObject({ decision: "deny", gate: "user", status: 503, reason: "review_failed" });
  });

  it("is capped by the cluster too: the ServiceAccount's token cannot do what its ClusterRole does not allow", async () => {
    const sa = upstream.serviceAccountToken(await (new LogInstallations(store).byName(PLUGIN)) as never);
    const r = await call(fake.url, "GET", "/api/v1/namespaces/openfief/services", { authorization: `Bearer ${await sa}` });
    expect(r.status).toBe(403);
  });
});

describe("streams", () => {
  it("pass a watch through", async () => {
    const w = stream(gw.url, `${CONFIGMAPS}?watch=true&resourceVersion=${Date.now()}`, { authorization: `Bearer ${await pluginToken()}` });
    expect(await w.status).toBe(200);
    fake.put({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "later", namespace: "openfief" }, data: {} });
    const line = await w.waitFor((l) => l.includes('"later"'));
    w.close();
    expect(JSON.parse(line)).toMatchObject({ type: "ADDED", object: { metadata: { name: "later" } } });
  });

  it("end a watch when its token expires, dropping the upstream's stream", async () => {
    const token = (await signPluginToken(t.signer, claims, 2)).token;
    const before = fake.requests.length;
    // Asked for an hour; `call` returns once the gateway ends the answer at the token's expiry.
    const r = await call(gw.url, "GET", `${CONFIGMAPS}?watch=true&timeoutSeconds=3600`, { authorization: `Bearer ${token}` });
    expect(r.status).toBe(200);
    const sent = fake.requests.slice(before).find((q) => q.path === "/api/v1/namespaces/openfief/configmaps");
    expect(Number(sent?.query["timeoutSeconds"])).toBeLessThanOrEqual(2);
    for (let i = 0; i < 100 && fake.openWatches("configmaps") > 0; i++) await new Promise((res) => setTimeout(res, 20));
    expect(fake.openWatches("configmaps")).toBe(0);
  });

  it("send a watch named in its /watch/ path as its collection with that name as a field selector, so the API server serves only it", async () => {
    const before = fake.requests.length;
    const w = stream(gw.url, "/clusters/c1/api/v1/watch/namespaces/openfief/configmaps/named-later", { authorization: `Bearer ${await pluginToken()}` });
    expect(await w.status).toBe(200);
    fake.put({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "noise-later", namespace: "openfief" }, data: {} });
    fake.put({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "named-later", namespace: "openfief" }, data: {} });
    const line = await w.waitFor((l) => l.includes('"named-later"'));
    w.close();
    expect(JSON.parse(line)).toMatchObject({ type: "ADDED", object: { metadata: { name: "named-later" } } });
    expect(w.lines.some((l) => l.includes("noise-later"))).toBe(false);
    const sent = fake.requests.slice(before).find((q) => q.path === "/api/v1/namespaces/openfief/configmaps");
    expect(sent?.query).toMatchObject({ watch: "true", fieldSelector: "metadata.name=named-later" });
    expect(Number(sent?.query["timeoutSeconds"])).toBeLessThanOrEqual(900);
    expect(await lastDecision()).toMatchObject({ decision: "allow", attributes: { verb: "watch", name: "named-later" }, served: { fieldSelector: "metadata.name=named-later" } });
  });

  function upgrade(path: string, protocolToken: string): Promise<{ head: string; socket: Socket; data: Buffer[] }> {
    return new Promise((resolve, reject) => {
      const u = new URL(gw.url);
      const socket = netConnect(Number(u.port), u.hostname);
      const data: Buffer[] = [];
      let head = "";
      socket.on("data", (d: Buffer) => {
        if (head.includes("\r\n\r\n")) {
          data.push(d);
          return;
        }
        head += d.toString("latin1");
        const end = head.indexOf("\r\n\r\n");
        if (end >= 0) {
          const rest = Buffer.from(head.slice(end + 4), "latin1");
          head = head.slice(0, end + 4);
          if (rest.length > 0) data.push(rest);
          resolve({ head, socket, data });
        }
      });
      socket.on("error", reject);
      socket.write(
        `GET ${path} HTTP/1.1\r\nHost: gateway\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n` +
          `Sec-WebSocket-Protocol: v5.channel.k8s.io, ${WEBSOCKET_TOKEN_PROTOCOL}${Buffer.from(protocolToken).toString("base64url")}\r\n\r\n`,
      );
    });
  }

  it("pass an exec upgrade through, authorised at its start as get and create, with the token never upstream", async () => {
    const token = await pluginToken();
    const before = fake.requests.length;
    const { head, socket, data } = await upgrade("/clusters/c1/api/v1/namespaces/openfief/pods/web/exec?command=sh&stdin=true", token);
    expect(head).toMatch(/^HTTP\/1\.1 101/);
    expect(head.toLowerCase()).toContain("sec-websocket-protocol: v5.channel.k8s.io");
    socket.write("ping");
    await new Promise<void>((resolve) => {
      const check = (): void => { if (Buffer.concat(data).toString().includes("ping")) resolve(); else setImmediate(check); };
      check();
    });
    socket.destroy();
    const seen = fake.requests.slice(before);
    const verbs = seen.filter((q) => q.path.endsWith("subjectaccessreviews")).map((q) => [(q.body as { spec: { user: string; resourceAttributes: { verb: string } } }).spec.user, (q.body as { spec: { resourceAttributes: { verb: string } } }).spec.resourceAttributes.verb]);
    expect(verbs).toEqual([["openfief:user:alice", "get"], ["openfief:user:alice", "create"], ["system:serviceaccount:openfief:plugin-ledger-view", "get"], ["system:serviceaccount:openfief:plugin-ledger-view", "create"]]);
    const up = seen.find((q) => q.path === "/api/v1/namespaces/openfief/pods/web/exec");
    expect(up?.client).toMatch(/^fake-sa\./);
    expect(String(up?.headers["sec-websocket-protocol"])).toBe("v5.channel.k8s.io");
    expect(await lastDecision()).toMatchObject({ decision: "allow", attributes: { verb: "get", resource: "pods", subresource: "exec", name: "web" } });
  });

  it("refuse an upgrade the user may not make, on the socket, with 403", async () => {
    const { head, socket } = await upgrade("/clusters/c1/api/v1/namespaces/openfief/pods/web/exec?command=sh", await pluginToken({ sub: "dave" }));
    socket.destroy();
    expect(head).toMatch(/^HTTP\/1\.1 403/);
    expect(await lastDecision()).toMatchObject({ decision: "deny", gate: "user", user: "dave" });
  });

  it("refuse an upgrade without a token with 401, unrecorded", async () => {
    const v = await store.version(gatewayStream(PLUGIN));
    const { head, socket } = await upgrade("/clusters/c1/api/v1/namespaces/openfief/pods/web/exec", "not-a-token");
    socket.destroy();
    expect(head).toMatch(/^HTTP\/1\.1 401/);
    expect(await store.version(gatewayStream(PLUGIN))).toBe(v);
  });
});
