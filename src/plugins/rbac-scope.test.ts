import { describe, expect, it } from "vitest";
import { ConfigMap } from "kubernetes-models/v1";
import { ClusterRole, ClusterRoleBinding } from "kubernetes-models/rbac.authorization.k8s.io/v1";
import { compile } from "./compile.js";
import type { Topology } from "./compile.js";
import { effective, isEmptyPending, needsApproval } from "./effective.js";
import { parseImageRef } from "./image-ref.js";
import { buildHostedObjects, buildObjects, hostedObjectsToJSON, listObjects, objectToJSON } from "./objects.js";
import type { PolicyRule } from "./rbac.js";
import { intersectRules, ruleCovered, uncoveredRules } from "./rbac-scope.js";
import { planRollout, rolloutPlanToJSON } from "./rollout.js";
import type { GrantSpec, Manifest } from "./types.js";

const R = (p: Partial<PolicyRule>): PolicyRule => ({ apiGroups: [], resources: [], verbs: [], resourceNames: [], nonResourceURLs: [], ...p });
const res = (verbs: string[], apiGroups: string[], resources: string[], resourceNames: string[] = []): PolicyRule => R({ verbs, apiGroups, resources, resourceNames });
const url = (verbs: string[], nonResourceURLs: string[]): PolicyRule => R({ verbs, nonResourceURLs });

describe("intersectRules", () => {
  it.each([
    { name: "a grant of exactly the request", req: [res(["get"], [""], ["pods"])], grant: [res(["get"], [""], ["pods"])], want: [res(["get"], [""], ["pods"])] },
    { name: "verbs narrowed", req: [res(["get", "list", "watch"], [""], ["pods"])], grant: [res(["get"], [""], ["pods"])], want: [res(["get"], [""], ["pods"])] },
    { name: "a wildcard grant giving the request", req: [res(["get"], ["apps"], ["deployments"])], grant: [res(["*"], ["*"], ["*"])], want: [res(["get"], ["apps"], ["deployments"])] },
    { name: "a wildcard request cut to the grant", req: [res(["*"], ["*"], ["*"])], grant: [res(["list"], [""], ["configmaps"])], want: [res(["list"], [""], ["configmaps"])] },
    { name: "*/scale meeting deployments/scale", req: [res(["get"], ["apps"], ["*/scale"])], grant: [res(["get"], ["apps"], ["deployments/scale", "deployments"])], want: [res(["get"], ["apps"], ["deployments/scale"])] },
    { name: "pods meeting */log: nothing (pods is not pods/log)", req: [res(["get"], [""], ["pods"])], grant: [res(["get"], [""], ["*/log"])], want: [] },
    { name: "names meeting no names", req: [res(["get"], [""], ["secrets"], ["ca"])], grant: [res(["get"], [""], ["secrets"])], want: [res(["get"], [""], ["secrets"], ["ca"])] },
    { name: "disjoint names: nothing, never every name", req: [res(["get"], [""], ["secrets"], ["a"])], grant: [res(["get"], [""], ["secrets"], ["b"])], want: [] },
    { name: "URL prefixes nested", req: [url(["get"], ["/apis/*"])], grant: [url(["get"], ["/apis/openfief.io/*"])], want: [url(["get"], ["/apis/openfief.io/*"])] },
    { name: "a URL under a prefix", req: [url(["get"], ["/healthz"])], grant: [url(["get"], ["*"])], want: [url(["get"], ["/healthz"])] },
    { name: "resource rules never meet URL rules", req: [res(["get"], ["*"], ["*"])], grant: [url(["get"], ["*"])], want: [] },
    { name: "two grant rules each giving a part", req: [res(["get", "list"], [""], ["pods"])], grant: [res(["get"], [""], ["pods"]), res(["list"], [""], ["pods"])], want: [res(["get"], [""], ["pods"]), res(["list"], [""], ["pods"])] },
    { name: "a rule subsumed by another dropped", req: [res(["*"], [""], ["pods"])], grant: [res(["get"], [""], ["pods"]), res(["get", "list"], [""], ["pods"])], want: [res(["get", "list"], [""], ["pods"])] },
  ])("gives $name", ({ req, grant, want }) => {
    expect(intersectRules(req, grant)).toEqual(want);
  });
});

describe("uncoveredRules", () => {
  it.each([
    { name: "a rule the grant repeats", rule: res(["get"], [""], ["pods"]), grant: [res(["get"], [""], ["pods"])], covered: true },
    { name: "a rule two grant rules cover between them", rule: res(["get", "list"], [""], ["pods"]), grant: [res(["get"], [""], ["pods"]), res(["list"], [""], ["pods"])], covered: true },
    { name: "a wildcard verb only a wildcard covers", rule: res(["*"], [""], ["pods"]), grant: [res(["get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"], [""], ["pods"])], covered: false },
    { name: "a wildcard resource covered by a wildcard", rule: res(["get"], [""], ["*"]), grant: [res(["get"], ["*"], ["*"])], covered: true },
    { name: "*/scale not covered by deployments/scale", rule: res(["get"], ["apps"], ["*/scale"]), grant: [res(["get"], ["apps"], ["deployments/scale"])], covered: false },
    { name: "named secrets covered by all secrets", rule: res(["get"], [""], ["secrets"], ["a", "b"]), grant: [res(["get"], [""], ["secrets"])], covered: true },
    { name: "all secrets not covered by named ones", rule: res(["get"], [""], ["secrets"]), grant: [res(["get"], [""], ["secrets"], ["a"])], covered: false },
    { name: "a prefix covered by a shorter prefix", rule: url(["get"], ["/apis/x/*"]), grant: [url(["get"], ["/apis/*"])], covered: true },
    { name: "a prefix that its literal and a longer prefix leave a gap in", rule: url(["get"], ["/a*"]), grant: [url(["get"], ["/a", "/a/*"])], covered: false },
    { name: "a request split across groups", rule: res(["get"], ["", "apps"], ["pods"]), grant: [res(["get"], [""], ["pods"]), res(["get"], ["apps"], ["*"])], covered: true },
    { name: "anything, by nothing", rule: res(["get"], [""], ["pods"]), grant: [], covered: false },
  ])("says $name is covered: $covered", ({ rule, grant, covered }) => {
    expect(ruleCovered(rule, grant)).toBe(covered);
    expect(uncoveredRules([rule], grant)).toEqual(covered ? [] : [rule]);
  });

  it("counts a rule as not covered when deciding would take more than its budget", () => {
    const rule = res(["get", "list"], [""], ["pods"]);
    const grant = [res(["get"], [""], ["pods"]), res(["list"], [""], ["pods"])];
    expect(ruleCovered(rule, grant, 1_000)).toBe(true);
    expect(ruleCovered(rule, grant, 1)).toBe(false);
  });

  it("shares one budget among all the rules of a manifest, so adding rules cannot multiply the work", () => {
    const grant = [res(["get"], [""], ["pods", "secrets"]), res(["list"], [""], ["pods", "secrets"])];
    const a = res(["get", "list"], [""], ["pods"]);
    const b = res(["get", "list"], [""], ["secrets"]);
    const plenty = uncoveredRules([a, b], grant);
    expect(plenty).toEqual([]);
    // Enough cells for one rule's search, not for two: the second counts as pending.
    let enough = 1;
    while (uncoveredRules([a], grant, enough).length > 0) enough++;
    expect(uncoveredRules([a, b], grant, enough)).toHaveLength(1);
    // A rule one grant rule covers alone needs no search at all.
    expect(uncoveredRules([res(["get"], [""], ["pods"])], grant, 0)).toEqual([]);
  });
});

const IMAGE = (() => {
  const r = parseImageRef(`ghcr.io/openfief/ledger-view@sha256:${"0f".repeat(32)}`);
  if (!r.ok) throw new Error("image");
  return r.value;
})();

const VIEW: Manifest = {
  capabilities: ["view"], egress: [], secrets: [], dataTiers: [],
  rbac: [res(["get", "list", "watch"], ["openfief.io"], ["plugins"]), res(["get"], [""], ["secrets"], ["ledger-ca"])],
};
const GRANT: GrantSpec = { capabilities: ["view"], egress: [], secrets: [], dataTiers: [], rbac: VIEW.rbac ?? [] };

describe("rules in effective permissions and rollout", () => {
  it("grants no rule when the view capability is not granted", () => {
    const e = effective({ ...VIEW, capabilities: ["view", "connector"] }, { ...GRANT, capabilities: ["connector"] });
    expect(e.ok && e.value.rbac).toEqual([]);
  });

  it("holds a new version that asks for more rules back, pending exactly those rules", () => {
    const wider: Manifest = { ...VIEW, rbac: [...(VIEW.rbac ?? []), res(["get"], [""], ["pods/log"])] };
    const pending = needsApproval(wider, GRANT);
    expect(pending.rbac).toEqual([res(["get"], [""], ["pods/log"])]);
    const plan = planRollout({ current: { image: IMAGE, manifest: wider }, currentDeployable: true, previous: { image: IMAGE, manifest: VIEW }, grant: GRANT });
    expect(plan.outcome).toBe("previous");
    expect(plan.reasons).toContain("approval_pending");
    expect(rolloutPlanToJSON(plan).pending.rbac).toEqual([{ apiGroups: [""], resources: ["pods/log"], verbs: ["get"] }]);
    expect(plan.run?.permissions.rbac).toEqual(intersectRules(VIEW.rbac ?? [], GRANT.rbac ?? []));
  });

  it("writes no rbac key in plans of plugins without rules", () => {
    const m: Manifest = { capabilities: ["connector"], egress: [], secrets: [], dataTiers: [] };
    const g: GrantSpec = { capabilities: ["connector"], egress: [], secrets: [], dataTiers: [] };
    const json = rolloutPlanToJSON(planRollout({ current: { image: IMAGE, manifest: m }, currentDeployable: true, previous: null, grant: g }));
    expect(Object.keys(json.pending)).toEqual(["capabilities", "egress", "secrets", "dataTiers"]);
    expect(Object.keys(json.run?.permissions ?? {})).toEqual(["capabilities", "egress", "secrets", "dataTiers"]);
    expect(isEmptyPending(needsApproval(m, g))).toBe(true);
  });
});

const TOPOLOGY: Topology = {
  core: { clusterIP: "10.96.0.10", port: 8080, podPort: 8081, podLabels: { "app.kubernetes.io/name": "openfief-core" } },
  proxy: { clusterIP: "10.96.0.11", podPort: 4750, podLabels: { "app.kubernetes.io/name": "openfief-egress" } },
  pluginPort: 9090,
  coreSubject: "system:serviceaccount:openfief:openfief-core",
};

describe("the plugin ServiceAccount's ClusterRole", () => {
  const e = effective(VIEW, GRANT);
  if (!e.ok) throw new Error("effective");
  const w = compile({ name: "ledger-view", image: IMAGE }, e.value, TOPOLOGY);
  if (!w.ok) throw new Error("compile");
  const objects = buildObjects(w.value);

  it("names both objects plugin-<name>-scope and binds the plugin's ServiceAccount", () => {
    expect(objects.clusterRole?.metadata?.name).toBe("plugin-ledger-view-scope");
    expect(objects.clusterRoleBinding?.metadata?.name).toBe("plugin-ledger-view-scope");
    expect(objects.clusterRoleBinding?.roleRef).toEqual({ apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "plugin-ledger-view-scope" });
    expect(objects.clusterRoleBinding?.subjects).toEqual([{ kind: "ServiceAccount", name: "plugin-ledger-view", namespace: "openfief" }]);
  });

  it("holds exactly the effective rules in Kubernetes' form", () => {
    expect(objects.clusterRole?.rules).toEqual([
      { apiGroups: [""], resources: ["secrets"], resourceNames: ["ledger-ca"], verbs: ["get"] },
      { apiGroups: ["openfief.io"], resources: ["plugins"], verbs: ["get", "list", "watch"] },
    ]);
  });

  it("passes Kubernetes' OpenAPI schemas", () => {
    expect(() => new ClusterRole(objectToJSON(objects.clusterRole as never) as never).validate()).not.toThrow();
    expect(() => new ClusterRoleBinding(objectToJSON(objects.clusterRoleBinding as never) as never).validate()).not.toThrow();
    expect(() => new ConfigMap(objectToJSON(objects.configMap) as never).validate()).not.toThrow();
  });

  it("applies them right after the ServiceAccount", () => {
    expect(listObjects(objects).map((o) => o.kind)).toEqual(["ServiceAccount", "ClusterRole", "ClusterRoleBinding", "ConfigMap", "NetworkPolicy", "Service", "Deployment"]);
  });

  it("binds the same rules to a plugin the plugin host runs, right after its ServiceAccount", () => {
    const hosted = buildHostedObjects(w.value);
    expect(hostedObjectsToJSON(hosted).map((o) => o["kind"])).toEqual(["ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Service"]);
    expect(hosted.clusterRole).toEqual(objects.clusterRole);
    expect(hosted.clusterRoleBinding).toEqual(objects.clusterRoleBinding);
  });

  it("makes no ClusterRole when no rule is effective", () => {
    const none = effective({ ...VIEW, rbac: [] }, GRANT);
    if (!none.ok) throw new Error("effective");
    const w2 = compile({ name: "ledger-view", image: IMAGE }, none.value, TOPOLOGY);
    if (!w2.ok) throw new Error("compile");
    const o = buildObjects(w2.value);
    expect(o.clusterRole).toBeUndefined();
    expect(listObjects(o)).toHaveLength(5);
  });
});
