import { describe, expect, it } from "vitest";
import { ErrorCode } from "./errors.js";
import type { FieldError } from "./errors.js";
import {
  RBAC_LIMITS,
  nonResourceURLMatches,
  parsePolicyRules,
  resourceMatches,
  resourceNameMatches,
  ruleToJSON,
  sameRules,
  sortRules,
  verbMatches,
} from "./rbac.js";
import type { PolicyRule } from "./rbac.js";
import { parseGrant, parseManifest } from "./validate.js";
import { manifestEqual } from "./manifest-equal.js";
import { parseManifestLabel } from "./manifest-label.js";

function parse(value: unknown): { rules: PolicyRule[] | null; errors: FieldError[] } {
  const errors: FieldError[] = [];
  const rules = parsePolicyRules(value, "manifest.rbac", errors);
  return { rules, errors };
}

const R = (p: Partial<PolicyRule>): PolicyRule => ({ apiGroups: [], resources: [], verbs: [], resourceNames: [], nonResourceURLs: [], ...p });

describe("parsePolicyRules", () => {
  it.each([
    { name: "FUN-17's example", value: [
      { apiGroups: ["cert-manager.io"], resources: ["certificates", "certificaterequests"], verbs: ["get", "list", "watch"] },
      { apiGroups: [""], resources: ["secrets"], verbs: ["get"], resourceNames: ["cert-manager-webhook-ca"] },
    ] },
    { name: "wildcards", value: [{ apiGroups: ["*"], resources: ["*"], verbs: ["*"] }] },
    { name: "subresources", value: [{ apiGroups: [""], resources: ["pods/log", "*/scale", "*/status"], verbs: ["get"] }] },
    { name: "non-resource URLs", value: [{ nonResourceURLs: ["/healthz", "/apis/*", "*"], verbs: ["get"] }] },
    { name: "an absent list", value: undefined },
    { name: "an empty list", value: [] },
  ])("accepts $name", ({ value }) => {
    const { rules, errors } = parse(value);
    expect(errors).toEqual([]);
    expect(rules).not.toBeNull();
  });

  it.each([
    { name: "a rule without verbs", value: [{ apiGroups: [""], resources: ["pods"] }], code: ErrorCode.Required, path: "manifest.rbac[0].verbs" },
    { name: "a resource rule without API groups", value: [{ resources: ["pods"], verbs: ["get"] }], code: ErrorCode.Required, path: "manifest.rbac[0].apiGroups" },
    { name: "a resource rule without resources", value: [{ apiGroups: [""], verbs: ["get"] }], code: ErrorCode.Required, path: "manifest.rbac[0].resources" },
    { name: "a rule for resources and URLs at once", value: [{ apiGroups: [""], resources: ["pods"], nonResourceURLs: ["/x"], verbs: ["get"] }], code: ErrorCode.InvalidRbacRule, path: "manifest.rbac[0].nonResourceURLs" },
    { name: "resourceNames on a URL rule", value: [{ nonResourceURLs: ["/x"], resourceNames: ["a"], verbs: ["get"] }], code: ErrorCode.InvalidRbacRule, path: "manifest.rbac[0].nonResourceURLs" },
    { name: "pods/*, which Kubernetes reads as a literal subresource", value: [{ apiGroups: [""], resources: ["pods/*"], verbs: ["get"] }], code: ErrorCode.InvalidRbacRule, path: "manifest.rbac[0].resources[0]" },
    { name: "a resource of two slashes", value: [{ apiGroups: [""], resources: ["pods/log/x"], verbs: ["get"] }], code: ErrorCode.InvalidRbacRule, path: "manifest.rbac[0].resources[0]" },
    { name: "an upper-case verb", value: [{ apiGroups: [""], resources: ["pods"], verbs: ["get", "LIST"] }], code: ErrorCode.InvalidRbacRule, path: "manifest.rbac[0].verbs[1]" },
    { name: "a bad API group", value: [{ apiGroups: ["Cert_Manager"], resources: ["x"], verbs: ["get"] }], code: ErrorCode.InvalidRbacRule, path: "manifest.rbac[0].apiGroups[0]" },
    { name: "a wildcard resource name", value: [{ apiGroups: [""], resources: ["pods"], resourceNames: ["*"], verbs: ["get"] }], code: ErrorCode.InvalidRbacRule, path: "manifest.rbac[0].resourceNames[0]" },
    { name: "a resource name with a slash", value: [{ apiGroups: [""], resources: ["pods"], resourceNames: ["a/b"], verbs: ["get"] }], code: ErrorCode.InvalidRbacRule, path: "manifest.rbac[0].resourceNames[0]" },
    { name: "a URL without a leading slash", value: [{ nonResourceURLs: ["healthz"], verbs: ["get"] }], code: ErrorCode.InvalidRbacRule, path: "manifest.rbac[0].nonResourceURLs[0]" },
    { name: "a URL with a star inside", value: [{ nonResourceURLs: ["/a*/b"], verbs: ["get"] }], code: ErrorCode.InvalidRbacRule, path: "manifest.rbac[0].nonResourceURLs[0]" },
    { name: "a repeated verb", value: [{ apiGroups: [""], resources: ["pods"], verbs: ["get", "get"] }], code: ErrorCode.Duplicate, path: "manifest.rbac[0].verbs[1]" },
    { name: "a repeated rule", value: [{ apiGroups: [""], resources: ["pods"], verbs: ["get"] }, { apiGroups: [""], resources: ["pods"], verbs: ["get"] }], code: ErrorCode.Duplicate, path: "manifest.rbac[1]" },
    { name: "an unknown field", value: [{ apiGroups: [""], resources: ["pods"], verbs: ["get"], namespaces: ["x"] }], code: ErrorCode.UnknownField, path: "manifest.rbac[0].namespaces" },
    { name: "a rule that is not an object", value: ["get pods"], code: ErrorCode.InvalidType, path: "manifest.rbac[0]" },
    { name: "rbac that is not a list", value: { verbs: ["get"] }, code: ErrorCode.InvalidType, path: "manifest.rbac" },
    { name: "a verb that is not a string", value: [{ apiGroups: [""], resources: ["pods"], verbs: [1] }], code: ErrorCode.InvalidType, path: "manifest.rbac[0].verbs[0]" },
    { name: "more rules than the cap", value: Array.from({ length: RBAC_LIMITS.rules + 1 }, (_, i) => ({ apiGroups: [""], resources: [`r${i}`], verbs: ["get"] })), code: ErrorCode.RbacLimitExceeded, path: "manifest.rbac" },
    { name: "more verbs than the cap", value: [{ apiGroups: [""], resources: ["pods"], verbs: Array.from({ length: RBAC_LIMITS.entries + 1 }, (_, i) => `v${i}`) }], code: ErrorCode.RbacLimitExceeded, path: "manifest.rbac[0].verbs" },
    { name: "a resource name longer than the cap", value: [{ apiGroups: [""], resources: ["pods"], resourceNames: ["a".repeat(RBAC_LIMITS.name + 1)], verbs: ["get"] }], code: ErrorCode.RbacLimitExceeded, path: "manifest.rbac[0].resourceNames[0]" },
  ])("refuses $name with its path", ({ value, code, path }) => {
    const { rules, errors } = parse(value);
    expect(rules).toBeNull();
    expect(errors).toContainEqual(expect.objectContaining({ code, path }));
  });

  it("reports every problem of every rule at once", () => {
    const { errors } = parse([
      { apiGroups: [""], resources: ["pods/*"], verbs: [] },
      { apiGroups: ["X"], resources: ["pods"], verbs: ["get"], extra: 1 },
    ]);
    expect(errors.map((e) => e.path).sort()).toEqual(["manifest.rbac[0].resources[0]", "manifest.rbac[0].verbs", "manifest.rbac[1].apiGroups[0]", "manifest.rbac[1].extra"]);
  });

  it("refuses a huge list before looking at its entries", () => {
    const { errors } = parse(Array.from({ length: 200_000 }, () => ({})));
    expect(errors).toHaveLength(1);
    expect(errors[0]?.code).toBe(ErrorCode.RbacLimitExceeded);
  });

  it("sorts every list and the rules", () => {
    const { rules } = parse([{ apiGroups: ["b", "a"], resources: ["z", "y"], verbs: ["watch", "get"] }]);
    expect(rules).toEqual([R({ apiGroups: ["a", "b"], resources: ["y", "z"], verbs: ["get", "watch"] })]);
  });
});

describe("rules in manifests and grants", () => {
  const base = { capabilities: ["view"], egress: [], secrets: [], dataTiers: [] };
  const rbac = [{ apiGroups: ["openfief.io"], resources: ["plugins"], verbs: ["get", "list"] }];

  it("refuses rules in a manifest that is not a view", () => {
    const r = parseManifest({ ...base, capabilities: ["connector"], rbac });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.errors).toContainEqual(expect.objectContaining({ code: ErrorCode.ViewRequired, path: "manifest.rbac" }));
  });

  it("refuses a UI bundle in a manifest that is not a view", () => {
    const r = parseManifest({ ...base, capabilities: ["connector"], ui: { bundle: `sha256:${"a".repeat(64)}` } });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.errors).toContainEqual(expect.objectContaining({ code: ErrorCode.ViewRequired, path: "manifest.ui" }));
  });

  it.each([
    { ui: { bundle: "sha256:abc" }, path: "manifest.ui.bundle" },
    { ui: { bundle: `sha256:${"a".repeat(64)}`, entry: "../index.html" }, path: "manifest.ui.entry" },
    { ui: { bundle: `sha256:${"a".repeat(64)}`, entry: "/index.html" }, path: "manifest.ui.entry" },
    { ui: { bundle: `sha256:${"a".repeat(64)}`, entry: "app.js" }, path: "manifest.ui.entry" },
    { ui: { bundle: `sha256:${"a".repeat(64)}`, extra: true }, path: "manifest.ui.extra" },
  ])("refuses the UI bundle $ui with its path", ({ ui, path }) => {
    const r = parseManifest({ ...base, ui });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.errors.map((e) => e.path)).toContain(path);
  });

  it("keeps a view's rules and UI bundle, with the default entry", () => {
    const r = parseManifest({ ...base, rbac, ui: { bundle: `sha256:${"a".repeat(64)}` } });
    expect(r.ok && r.value.rbac).toEqual([R({ apiGroups: ["openfief.io"], resources: ["plugins"], verbs: ["get", "list"] })]);
    expect(r.ok && r.value.ui).toEqual({ bundle: `sha256:${"a".repeat(64)}`, entry: "index.html" });
  });

  it("leaves a manifest without rules as it was", () => {
    const r = parseManifest({ ...base, rbac: [] });
    expect(r.ok && Object.keys(r.value).sort()).toEqual(["capabilities", "dataTiers", "egress", "secrets"]);
  });

  it("reads a grant's approved rules with paths under spec.rbac", () => {
    const good = parseGrant({ name: "ledger-view", spec: { capabilities: ["view"], rbac } });
    expect(good.ok && good.value.spec.rbac).toHaveLength(1);
    const bad = parseGrant({ name: "ledger-view", spec: { capabilities: ["view"], rbac: [{ verbs: ["get"], resources: ["pods"] }] } });
    expect(bad.ok).toBe(false);
    if (!bad.ok) expect(bad.errors).toContainEqual(expect.objectContaining({ path: "spec.rbac[0].apiGroups" }));
  });

  it("reads rules from the signed label", () => {
    const r = parseManifestLabel(JSON.stringify({ ...base, rbac }));
    expect(r.ok && r.value.rbac).toHaveLength(1);
  });

  it("tells manifests apart by their rules and UI bundles, not by list order", () => {
    const a = parseManifest({ ...base, rbac: [{ apiGroups: ["openfief.io"], resources: ["plugins", "plugingrants"], verbs: ["list", "get"] }] });
    const b = parseManifest({ ...base, rbac: [{ apiGroups: ["openfief.io"], resources: ["plugingrants", "plugins"], verbs: ["get", "list"] }] });
    const c = parseManifest({ ...base, rbac: [{ apiGroups: ["openfief.io"], resources: ["plugins"], verbs: ["get", "list"] }] });
    const d = parseManifest({ ...base, rbac: [{ apiGroups: ["openfief.io"], resources: ["plugins", "plugingrants"], verbs: ["list", "get"] }], ui: { bundle: `sha256:${"b".repeat(64)}` } });
    if (!a.ok || !b.ok || !c.ok || !d.ok) throw new Error("parse");
    expect(manifestEqual(a.value, b.value)).toBe(true);
    expect(manifestEqual(a.value, c.value)).toBe(false);
    expect(manifestEqual(a.value, d.value)).toBe(false);
  });
});

describe("Kubernetes' field matchers", () => {
  it.each([
    { rule: ["*"], resource: "pods", sub: "", want: true },
    { rule: ["*"], resource: "pods", sub: "log", want: true },
    { rule: ["pods"], resource: "pods", sub: "", want: true },
    { rule: ["pods"], resource: "pods", sub: "log", want: false },
    { rule: ["pods/log"], resource: "pods", sub: "log", want: true },
    { rule: ["pods/log"], resource: "pods", sub: "", want: false },
    { rule: ["*/scale"], resource: "deployments", sub: "scale", want: true },
    { rule: ["*/scale"], resource: "deployments", sub: "", want: false },
    { rule: ["*/scale"], resource: "deployments", sub: "status", want: false },
    { rule: ["pods/*"], resource: "pods", sub: "log", want: false },
    { rule: ["pods/*"], resource: "pods", sub: "*", want: true },
    { rule: ["*/*"], resource: "pods", sub: "log", want: false },
  ])("resource $rule against $resource/$sub is $want", ({ rule, resource, sub, want }) => {
    expect(resourceMatches(R({ resources: rule }), resource, sub)).toBe(want);
  });

  it.each([
    { rule: [], name: "", want: true },
    { rule: [], name: "x", want: true },
    { rule: ["x"], name: "x", want: true },
    { rule: ["x"], name: "", want: false },
    { rule: ["x"], name: "y", want: false },
  ])("resourceNames $rule against $name is $want", ({ rule, name, want }) => {
    expect(resourceNameMatches(R({ resourceNames: rule }), name)).toBe(want);
  });

  it.each([
    { rule: ["*"], path: "/anything", want: true },
    { rule: ["/healthz"], path: "/healthz", want: true },
    { rule: ["/healthz"], path: "/healthz/ready", want: false },
    { rule: ["/healthz*"], path: "/healthz/ready", want: true },
    { rule: ["/healthz/*"], path: "/healthz", want: false },
    { rule: ["/apis**"], path: "/apis/x", want: true },
  ])("nonResourceURLs $rule against $path is $want", ({ rule, path, want }) => {
    expect(nonResourceURLMatches(R({ nonResourceURLs: rule }), path)).toBe(want);
  });

  it("matches a verb by * or by itself, case-sensitively", () => {
    expect(verbMatches(R({ verbs: ["*"] }), "deletecollection")).toBe(true);
    expect(verbMatches(R({ verbs: ["get"] }), "get")).toBe(true);
    expect(verbMatches(R({ verbs: ["get"] }), "GET")).toBe(false);
  });
});

describe("rule forms", () => {
  it("writes Kubernetes' JSON with empty lists left out", () => {
    expect(ruleToJSON(R({ apiGroups: [""], resources: ["pods"], verbs: ["get"] }))).toEqual({ apiGroups: [""], resources: ["pods"], verbs: ["get"] });
  });

  it("compares rule lists as sets", () => {
    expect(sameRules([R({ verbs: ["b", "a"], nonResourceURLs: ["/x"] })], [R({ verbs: ["a", "b"], nonResourceURLs: ["/x"] })])).toBe(true);
    expect(sameRules([R({ verbs: ["a"], nonResourceURLs: ["/x"] })], [])).toBe(false);
    expect(sortRules([R({ verbs: ["a"] }), R({ verbs: ["a"] })])).toHaveLength(1);
  });
});
