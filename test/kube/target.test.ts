import { NetworkPolicy } from "kubernetes-models/networking.k8s.io/v1";
import { ConfigMap, ServiceAccount } from "kubernetes-models/v1";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { KubeObject } from "../../src/reconciler/target.js";
import { KubeError } from "../../src/kube/errors.js";
import { allowListFieldManager, KubernetesTarget, OPERATOR_FIELD_MANAGER, PLUGIN_LABEL, pluginHostFieldManager } from "../../src/kube/target.js";
import type { ApplyRecord } from "../../src/kube/target.js";
import { FakeApiServer } from "./fake-apiserver.js";

const NS = "openfief";

function pluginCr(name: string): Record<string, unknown> {
  return {
    apiVersion: "openfief.io/v1alpha1",
    kind: "Plugin",
    metadata: { name, namespace: NS },
    spec: { image: `ghcr.io/acme/${name}@sha256:${"a".repeat(64)}`, manifest: { capabilities: ["connector"] } },
  };
}

function workload(name: string): KubeObject[] {
  return [
    { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: `plugin-${name}`, namespace: NS }, automountServiceAccountToken: false },
    { apiVersion: "v1", kind: "ConfigMap", metadata: { name: `plugin-${name}-config`, namespace: NS }, data: { "config.json": "{}" } },
    {
      apiVersion: "networking.k8s.io/v1",
      kind: "NetworkPolicy",
      metadata: { name: `plugin-${name}`, namespace: NS },
      spec: { podSelector: { matchLabels: { app: `plugin-${name}` } }, policyTypes: ["Ingress", "Egress"] },
    },
  ];
}

describe("KubernetesTarget against the fake API server", () => {
  let server: FakeApiServer;
  let records: ApplyRecord[];
  let target: KubernetesTarget;

  beforeEach(async () => {
    server = await FakeApiServer.start();
    records = [];
    target = new KubernetesTarget(server.kubeConfig(), { onRecord: (r) => records.push(r) });
  });
  afterEach(async () => {
    await server.close();
  });

  it("applies every object with one server-side apply PATCH per object, forced, as openfief-operator", async () => {
    server.put(pluginCr("nbp-fx"));
    const result = await target.applyPluginRecorded("nbp-fx", workload("nbp-fx"));
    const patches = server.requests.filter((r) => r.method === "PATCH");
    expect(patches.map((p) => p.path)).toEqual([
      "/api/v1/namespaces/openfief/serviceaccounts/plugin-nbp-fx",
      "/api/v1/namespaces/openfief/configmaps/plugin-nbp-fx-config",
      "/apis/networking.k8s.io/v1/namespaces/openfief/networkpolicies/plugin-nbp-fx",
    ]);
    for (const p of patches) {
      expect(p.contentType).toBe("application/apply-patch+yaml");
      expect(p.query).toMatchObject({ fieldManager: OPERATOR_FIELD_MANAGER, force: "true" });
    }
    expect(result.map((r) => r.action)).toEqual(["applied", "applied", "applied"]);
    expect(records).toEqual(result);
  });

  it("sets an owner reference to the Plugin's uid so deleting the Plugin garbage-collects its objects", async () => {
    const plugin = server.put(pluginCr("nbp-fx"));
    await target.applyPlugin("nbp-fx", workload("nbp-fx"));
    const sa = server.get("v1", "ServiceAccount", NS, "plugin-nbp-fx");
    expect(sa?.metadata["ownerReferences"]).toEqual([
      { apiVersion: "openfief.io/v1alpha1", kind: "Plugin", name: "nbp-fx", uid: plugin.metadata["uid"], controller: true, blockOwnerDeletion: true },
    ]);
    expect(sa?.metadata["labels"]).toMatchObject({ [PLUGIN_LABEL]: "nbp-fx" });
    server.remove("openfief.io/v1alpha1", "Plugin", NS, "nbp-fx");
    expect(server.list("v1", "ServiceAccount", NS)).toEqual([]);
    expect(server.list("networking.k8s.io/v1", "NetworkPolicy", NS)).toEqual([]);
    expect(server.list("v1", "ConfigMap", NS)).toEqual([]);
  });

  it("writes objects that are valid against Kubernetes' OpenAPI schemas", async () => {
    server.put(pluginCr("nbp-fx"));
    await target.applyPlugin("nbp-fx", workload("nbp-fx"));
    await target.applyAllowLists({ "nbp-fx": "api.nbp.pl:443\n" });
    expect(() => new ServiceAccount(server.get("v1", "ServiceAccount", NS, "plugin-nbp-fx") as never).validate()).not.toThrow();
    expect(() => new NetworkPolicy(server.get("networking.k8s.io/v1", "NetworkPolicy", NS, "plugin-nbp-fx") as never).validate()).not.toThrow();
    expect(() => new ConfigMap(server.get("v1", "ConfigMap", NS, "openfief-egress-allowlist") as never).validate()).not.toThrow();
  });

  it("refuses to apply objects for a Plugin the cluster does not hold, so nothing is created without an owner", async () => {
    await expect(target.applyPlugin("ghost", workload("ghost"))).rejects.toMatchObject({ code: "plugin_not_found" });
    expect(server.requests.filter((r) => r.method === "PATCH")).toEqual([]);
  });

  it("applies a view's ClusterRole and binding without a namespace or an owner, and prunes them by their labels", async () => {
    server.put(pluginCr("ledger-view"));
    const scope: KubeObject[] = [
      { apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRole", metadata: { name: "plugin-ledger-view-scope" }, rules: [{ apiGroups: ["openfief.io"], resources: ["plugins"], verbs: ["list"] }] },
      {
        apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRoleBinding", metadata: { name: "plugin-ledger-view-scope" },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "plugin-ledger-view-scope" },
        subjects: [{ kind: "ServiceAccount", name: "plugin-ledger-view", namespace: NS }],
      },
    ];
    await target.applyPlugin("ledger-view", [...workload("ledger-view"), ...scope]);
    const patches = server.requests.filter((r) => r.method === "PATCH").map((p) => p.path);
    expect(patches).toContain("/apis/rbac.authorization.k8s.io/v1/clusterroles/plugin-ledger-view-scope");
    expect(patches).toContain("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/plugin-ledger-view-scope");
    const role = server.get("rbac.authorization.k8s.io/v1", "ClusterRole", "", "plugin-ledger-view-scope") as { metadata: Record<string, unknown> } | undefined;
    expect(role?.metadata.namespace).toBeUndefined();
    expect(role?.metadata.ownerReferences).toBeUndefined();
    expect(role?.metadata.labels).toMatchObject({ [PLUGIN_LABEL]: "ledger-view" });
    const pruned = await target.applyPluginRecorded("ledger-view", workload("ledger-view"));
    expect(pruned.filter((r) => r.action === "pruned").map((r) => `${r.kind}/${r.name}`).sort()).toEqual(["ClusterRole/plugin-ledger-view-scope", "ClusterRoleBinding/plugin-ledger-view-scope"]);
    expect(server.list("rbac.authorization.k8s.io/v1", "ClusterRole", "")).toEqual([]);
  });

  it("prunes the plugin's objects that are no longer desired and records each prune", async () => {
    server.put(pluginCr("nbp-fx"));
    await target.applyPlugin("nbp-fx", workload("nbp-fx"));
    records.length = 0;
    const result = await target.applyPluginRecorded("nbp-fx", workload("nbp-fx").slice(0, 1));
    expect(result.filter((r) => r.action === "pruned").map((r) => `${r.kind}/${r.name}`).sort()).toEqual([
      "ConfigMap/plugin-nbp-fx-config",
      "NetworkPolicy/plugin-nbp-fx",
    ]);
    expect(server.list("v1", "ConfigMap", NS)).toEqual([]);
    expect(server.get("v1", "ServiceAccount", NS, "plugin-nbp-fx")).toBeDefined();
  });

  it("removes only the named plugin's objects and lists the plugins it holds objects for", async () => {
    server.put(pluginCr("nbp-fx"));
    server.put(pluginCr("ibkr-flex"));
    await target.applyPlugin("nbp-fx", workload("nbp-fx"));
    await target.applyPlugin("ibkr-flex", workload("ibkr-flex"));
    expect(await target.listPlugins()).toEqual(["ibkr-flex", "nbp-fx"]);
    await target.removePlugin("nbp-fx");
    expect(await target.listPlugins()).toEqual(["ibkr-flex"]);
    expect(server.get("v1", "ServiceAccount", NS, "plugin-ibkr-flex")).toBeDefined();
  });

  it("takes back a field someone changed by hand, because the operator applies with force", async () => {
    server.put(pluginCr("nbp-fx"));
    await target.applyPlugin("nbp-fx", workload("nbp-fx"));
    const np = server.get("networking.k8s.io/v1", "NetworkPolicy", NS, "plugin-nbp-fx");
    server.put({ ...np, spec: { podSelector: {}, policyTypes: [] } });
    await target.applyPlugin("nbp-fx", workload("nbp-fx"));
    expect(server.get("networking.k8s.io/v1", "NetworkPolicy", NS, "plugin-nbp-fx")?.["spec"]).toEqual(workload("nbp-fx")[2]?.["spec"]);
  });

  it.each([["UPPER"], ["-x"], ["a".repeat(57)]])("refuses the invalid plugin name %j before any request", async (name) => {
    await expect(target.applyPlugin(name, [])).rejects.toBeInstanceOf(KubeError);
    expect(server.requests).toEqual([]);
  });

  describe("the allow-list ConfigMap", () => {
    it("applies each plugin's key with that plugin's own field manager, sending only that key", async () => {
      await target.applyAllowLists({ "ibkr-flex": "ndcdyn.interactivebrokers.com:443\n", "nbp-fx": "api.nbp.pl:443\n" });
      const patches = server.requests.filter((r) => r.method === "PATCH" && r.path.endsWith("/configmaps/openfief-egress-allowlist"));
      const byManager = Object.fromEntries(patches.map((p) => [p.query["fieldManager"], (p.body as { data?: unknown }).data]));
      expect(byManager).toEqual({
        [OPERATOR_FIELD_MANAGER]: undefined,
        [allowListFieldManager("ibkr-flex")]: { "ibkr-flex": "ndcdyn.interactivebrokers.com:443\n" },
        [allowListFieldManager("nbp-fx")]: { "nbp-fx": "api.nbp.pl:443\n" },
      });
      for (const p of patches) {
        expect(p.contentType).toBe("application/apply-patch+yaml");
        expect(p.query["force"]).toBe("true");
      }
      expect(server.managers("v1", "ConfigMap", NS, "openfief-egress-allowlist")).toMatchObject({
        "openfief-allowlist-ibkr-flex": ["data.ibkr-flex"],
        "openfief-allowlist-nbp-fx": ["data.nbp-fx"],
      });
    });

    it("keeps another plugin's key when one plugin's key changes", async () => {
      await target.applyAllowLists({ a: "a.example.com:443\n", b: "b.example.com:443\n" });
      await target.applyAllowLists({ a: "a2.example.com:443\n", b: "b.example.com:443\n" });
      expect(server.get("v1", "ConfigMap", NS, "openfief-egress-allowlist")?.["data"]).toEqual({ a: "a2.example.com:443\n", b: "b.example.com:443\n" });
    });

    it("removes a stopped plugin's key by applying an empty ConfigMap with its manager, and keeps the rest", async () => {
      await target.applyAllowLists({ a: "a.example.com:443\n", b: "" });
      records.length = 0;
      await target.applyAllowLists({ b: "" });
      expect(server.get("v1", "ConfigMap", NS, "openfief-egress-allowlist")?.["data"]).toEqual({ b: "" });
      const removal = server.requests.filter((r) => r.method === "PATCH" && r.query["fieldManager"] === "openfief-allowlist-a").at(-1);
      expect(removal?.body).toEqual({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "openfief-egress-allowlist", namespace: NS } });
      expect(records.filter((r) => r.action === "allowlist-key-removed").map((r) => r.key)).toEqual(["a"]);
    });

    it("never touches a key another field manager put there by hand unless it is a plugin's", async () => {
      server.put({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "openfief-egress-allowlist", namespace: NS }, data: { "not a plugin": "x" } });
      await target.applyAllowLists({ a: "a.example.com:443\n" });
      expect(server.get("v1", "ConfigMap", NS, "openfief-egress-allowlist")?.["data"]).toEqual({ "not a plugin": "x", a: "a.example.com:443\n" });
    });
  });

  describe("the plugin-host ConfigMap", () => {
    const entry = (m: string): string => `{"image":"ghcr.io/acme/x@sha256:${"a".repeat(64)}","module":"${m.repeat(64)}","origins":[]}`;

    it("applies each plugin's key with that plugin's own field manager, sending only that key", async () => {
      const result = await target.applyPluginHostRecorded({ "ecb-fx": entry("1"), other: entry("2") });
      const patches = server.requests.filter((r) => r.method === "PATCH" && r.path.endsWith("/configmaps/openfief-plugin-host"));
      const byManager = Object.fromEntries(patches.map((p) => [p.query["fieldManager"], (p.body as { data?: unknown }).data]));
      expect(byManager).toEqual({ [OPERATOR_FIELD_MANAGER]: undefined, [pluginHostFieldManager("ecb-fx")]: { "ecb-fx": entry("1") }, [pluginHostFieldManager("other")]: { other: entry("2") } });
      expect(server.managers("v1", "ConfigMap", NS, "openfief-plugin-host")).toMatchObject({ "openfief-plugin-host-ecb-fx": ["data.ecb-fx"], "openfief-plugin-host-other": ["data.other"] });
      expect(result.map((r) => [r.action, r.key])).toEqual([["plugin-host-key-applied", "ecb-fx"], ["plugin-host-key-applied", "other"]]);
    });

    it("removes a stopped plugin's key with its manager, keeps the rest, and never touches the allow-lists", async () => {
      await target.applyAllowLists({ "ecb-fx": "www.ecb.europa.eu:443\n" });
      await target.applyPluginHost({ "ecb-fx": entry("1"), other: entry("2") });
      records.length = 0;
      await target.applyPluginHost({ other: entry("2") });
      expect(server.get("v1", "ConfigMap", NS, "openfief-plugin-host")?.["data"]).toEqual({ other: entry("2") });
      expect(records.filter((r) => r.action === "plugin-host-key-removed").map((r) => r.key)).toEqual(["ecb-fx"]);
      expect(server.get("v1", "ConfigMap", NS, "openfief-egress-allowlist")?.["data"]).toEqual({ "ecb-fx": "www.ecb.europa.eu:443\n" });
    });

    it("refuses a key that is not a plugin name before sending anything for it", async () => {
      await expect(target.applyPluginHost({ "../x": entry("1") })).rejects.toBeInstanceOf(KubeError);
      expect(server.requests.filter((r) => r.method === "PATCH" && r.query["fieldManager"] === pluginHostFieldManager("../x"))).toEqual([]);
    });
  });
});
