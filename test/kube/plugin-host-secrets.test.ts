/**
 * The instance Secrets of WebAssembly plugins in a cluster (docs/adr/0198), against the fake API
 * server and its RBAC: the operator's target keeps the Role `openfief-plugin-host-secrets` naming
 * exactly the Secrets the published plugins were granted, and the plugin host, authenticated as its
 * own ServiceAccount, reads those and nothing else; a Secret it may not read is left out, logged
 * by name and status, never by value.
 */
import { Writable } from "node:stream";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiSecretReader } from "../../src/compose/cluster-secrets.js";
import { KubernetesTarget } from "../../src/kube/target.js";
import { encodeHostedPlugins, NAMESPACE, PLUGIN_HOST_SECRET_ROLE } from "../../src/plugins/index.js";
import { FakeApiServer } from "./fake-apiserver.js";

const NS = NAMESPACE;
const IMAGE = `localhost/openfief-demo/ibkr-flex@sha256:${"ab".repeat(32)}`;
const MODULE = "1a".repeat(32);
const b64 = (s: string): string => Buffer.from(s).toString("base64");

let server: FakeApiServer;
let hostToken: string;
const logs: string[] = [];

beforeAll(async () => {
  server = await FakeApiServer.start();
  server.put({ apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "openfief-plugin-host", namespace: NS } });
  server.put({ apiVersion: "rbac.authorization.k8s.io/v1", kind: "RoleBinding", metadata: { name: PLUGIN_HOST_SECRET_ROLE, namespace: NS },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: PLUGIN_HOST_SECRET_ROLE },
    subjects: [{ kind: "ServiceAccount", name: "openfief-plugin-host", namespace: NS }] });
  server.put({ apiVersion: "v1", kind: "Secret", metadata: { name: "ibkr-flex-token", namespace: NS }, data: { token: b64("flex-token-value"), queryId: b64("123456") } });
  server.put({ apiVersion: "v1", kind: "Secret", metadata: { name: "another-instances", namespace: NS }, data: { token: b64("not-yours") } });
  // The plugin host's own token, as its pod presents it: the fake enforces RBAC on tokens it issued.
  const issued = await fetch(`${server.url}/api/v1/namespaces/${NS}/serviceaccounts/openfief-plugin-host/token`, {
    method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ spec: { audiences: ["https://kubernetes.default.svc"], expirationSeconds: 3600 } }),
  });
  hostToken = ((await issued.json()) as { status: { token: string } }).status.token;
  const target = new KubernetesTarget(server.kubeConfig(), {});
  await target.applyPluginHostRecorded(encodeHostedPlugins(new Map([
    ["ibkr-flex", { image: IMAGE, module: MODULE, egress: [], secrets: [{ name: "ibkr-flex-token", role: "flex" }] }],
    ["ecb-fx", { image: IMAGE, module: MODULE, egress: [] }],
  ])));
}, 30_000);

afterAll(async () => {
  await server?.close();
});

describe("the plugin host's instance Secrets", () => {
  it("are named, exactly, by the Role the operator keeps", () => {
    expect(server.get("rbac.authorization.k8s.io/v1", "Role", NS, PLUGIN_HOST_SECRET_ROLE)?.["rules"]).toEqual([
      { apiGroups: [""], resources: ["secrets"], verbs: ["get"], resourceNames: ["ibkr-flex-token"] },
    ]);
  });

  it("are read as the plugin host, by the role the manifest names, on every call", async () => {
    const read = await apiSecretReader(server.kubeConfig(hostToken), { logger: pino({ level: "silent" }) });
    const values = await read("ibkr-flex", [{ name: "ibkr-flex-token", role: "flex" }]);
    expect([...values.keys()]).toEqual(["flex"]);
    expect(Object.fromEntries(values.get("flex") ?? [])).toEqual({ token: "flex-token-value", queryId: "123456" });
  });

  it("leave out a Secret the Role does not name, logging its name and status only", async () => {
    const sink = new Writable({ write(chunk: Buffer, _e, cb) { logs.push(chunk.toString("utf8")); cb(); } });
    const read = await apiSecretReader(server.kubeConfig(hostToken), { logger: pino({ level: "warn" }, sink) });
    const values = await read("ibkr-flex", [{ name: "another-instances" }, { name: "ibkr-flex-token" }]);
    expect([...values.keys()]).toEqual(["ibkr-flex-token"]);
    expect(logs.join("")).toContain('"secret":"another-instances"');
    expect(logs.join("")).toContain("the API answered 403");
    for (const secret of ["not-yours", "flex-token-value", hostToken]) expect(logs.join("")).not.toContain(secret);
  });

  it("have no rule at all once no published plugin was granted one", async () => {
    const target = new KubernetesTarget(server.kubeConfig(), {});
    await target.applyPluginHostRecorded(encodeHostedPlugins(new Map([["ecb-fx", { image: IMAGE, module: MODULE, egress: [] }]])));
    expect(server.get("rbac.authorization.k8s.io/v1", "Role", NS, PLUGIN_HOST_SECRET_ROLE)?.["rules"]).toEqual([]);
  });
});
