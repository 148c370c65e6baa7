import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { CAPS, jsonLimitProblem, utf8Length } from "./caps.js";
import type { JsonLimits } from "./caps.js";
import { ErrorCode } from "./errors.js";

const LIMITS: JsonLimits = { bytes: 100, depth: 3, values: 20, listItems: 5, keys: 4, stringLength: 10 };

describe("jsonLimitProblem", () => {
  it.each<[string, unknown]>([
    ["a scalar", 5],
    ["a small object", { a: [1, 2, "x"], b: null, c: true }],
    ["a value exactly at the depth", [[["x"]]]],
    ["a list exactly at its cap", [1, 2, 3, 4, 5]],
    ["a string exactly at its cap", "x".repeat(10)],
  ])("accepts %s", (_what, value) => {
    expect(jsonLimitProblem(value, "v", "the value", LIMITS)).toBeUndefined();
  });

  it.each<[string, unknown, string, string]>([
    ["one level too deep", { a: [[[1]]] }, "v.a[0][0]", "nests deeper than 3"],
    ["a list over its cap", { a: [1, 2, 3, 4, 5, 6] }, "v.a", "6 entries"],
    ["an object over its cap", { a: 1, b: 2, c: 3, d: 4, e: 5 }, "v", "5 entries"],
    ["a string over its cap", ["short", "x".repeat(11)], "v[1]", "11 characters"],
    ["a member name over its cap", { ["k".repeat(11)]: 1 }, `v.${"k".repeat(11)}`, "a member name"],
    ["too many values", [[1, 2, 3, 4], [1, 2, 3, 4], [1, 2, 3, 4], [1, 2, 3, 4], [1, 2, 3, 4]], "v", "more than 20 values"],
    ["too many bytes, counted in UTF-8", Array.from({ length: 5 }, () => "é".repeat(10)), "v", "larger than 100 bytes"],
  ])("refuses %s at the path of the excess", (_what, value, path, message) => {
    expect(jsonLimitProblem(value, "v", "the value", LIMITS)).toEqual({ code: ErrorCode.TooLarge, path, message: expect.stringContaining(message) });
  });

  it("stops at the first excess of a value nested a million levels deep", () => {
    let v: unknown = 1;
    for (let i = 0; i < 1_000_000; i++) v = [v];
    expect(jsonLimitProblem(v, "v", "the value", LIMITS)?.code).toBe(ErrorCode.TooLarge);
  });

  it("refuses a list of ten million entries before reading them", () => {
    expect(jsonLimitProblem(new Array(10_000_000).fill(0), "v", "the value", { bytes: 1000, depth: 3 })?.message).toContain("larger than 1000 bytes");
  });

  it("names the caller's value in its message", () => {
    expect(jsonLimitProblem("x".repeat(200), "v", "the config", { bytes: 100, depth: 3 })?.message).toBe("the config is larger than 100 bytes as JSON");
  });
});

describe("utf8Length", () => {
  it.each<[string, number]>([
    ["", 0],
    ["abc", 3],
    ["é", 2],
    ["€", 3],
    ["😀", 4],
    ["\ud83d", 3],
    ["a\ud83db", 5],
  ])("counts %j as %i bytes", (text, bytes) => {
    expect(utf8Length(text)).toBe(bytes);
    expect(utf8Length(text)).toBe(new TextEncoder().encode(text).length);
  });

  it("stops counting past its limit", () => {
    expect(utf8Length("é".repeat(1000), 10)).toBe(11);
    expect(utf8Length("x".repeat(1_000_000), 10)).toBe(11);
  });
});

// --- the table and the CRDs say the same ------------------------------------------------------

type Node = Record<string, unknown>;
function crd(file: string): Node {
  const doc = parse(readFileSync(new URL(`../../deploy/crds/${file}`, import.meta.url), "utf8")) as Node;
  const versions = (doc["spec"] as Node)["versions"] as Node[];
  return ((versions[0] as Node)["schema"] as Node)["openAPIV3Schema"] as Node;
}
function at(node: Node, ...keys: string[]): Node {
  return keys.reduce<Node>((n, k) => {
    const next = n[k];
    if (typeof next !== "object" || next === null) throw new Error(`no ${k} in the CRD`);
    return next as Node;
  }, node);
}
const props = (n: Node, ...names: string[]): Node => names.reduce<Node>((x, name) => at(x, "properties", name), n);

/** A PolicyRule list's caps, as the CRD writes them: the rules, and each list of each rule. */
function policyRuleCaps(field: string, rbac: Node): [string, Node, string, number][] {
  const rule = at(rbac, "items");
  const list = (name: string, length: number): [string, Node, string, number][] => [
    [`${field}[].${name}`, props(rule, name), "maxItems", CAPS.policyRuleEntries],
    [`${field}[].${name}[]`, at(props(rule, name), "items"), "maxLength", length],
  ];
  return [
    [field, rbac, "maxItems", CAPS.policyRules],
    ...list("apiGroups", CAPS.policyName),
    ...list("resources", CAPS.policyName),
    ...list("verbs", CAPS.policyVerb),
    ...list("resourceNames", CAPS.policyName),
    ...list("nonResourceURLs", CAPS.policyUrl),
  ];
}

const plugin = crd("plugins.openfief.io.yaml");
const grant = crd("plugingrants.openfief.io.yaml");
const manifest = props(plugin, "spec", "manifest");
const grantSpec = props(grant, "spec");

describe("the caps agree with the CRDs", () => {
  it.each<[string, Node, string, number]>([
    ["Plugin spec.image", props(plugin, "spec", "image"), "maxLength", CAPS.imageRef],
    ["Plugin manifest.egress", props(manifest, "egress"), "maxItems", CAPS.listItems],
    ["Plugin manifest.egress[].host", props(at(props(manifest, "egress"), "items"), "host"), "maxLength", CAPS.hostname],
    ["Plugin manifest.secrets", props(manifest, "secrets"), "maxItems", CAPS.listItems],
    ["Plugin manifest.secrets[].name", props(at(props(manifest, "secrets"), "items"), "name"), "maxLength", CAPS.secretName],
    ["Plugin manifest.secrets[].mountPath", props(at(props(manifest, "secrets"), "items"), "mountPath"), "maxLength", CAPS.mountPath],
    ["Plugin manifest.dataTiers", props(manifest, "dataTiers"), "maxItems", CAPS.listItems],
    ["PluginGrant spec.egress", props(grantSpec, "egress"), "maxItems", CAPS.listItems],
    ["PluginGrant spec.egress[].host", props(at(props(grantSpec, "egress"), "items"), "host"), "maxLength", CAPS.hostname],
    ["PluginGrant spec.secrets", props(grantSpec, "secrets"), "maxItems", CAPS.listItems],
    ["PluginGrant spec.secrets[]", at(props(grantSpec, "secrets"), "items"), "maxLength", CAPS.secretName],
    ["PluginGrant spec.secretRoles", props(grantSpec, "secretRoles"), "maxItems", CAPS.listItems],
    ["PluginGrant spec.secretRoles[].role", props(at(props(grantSpec, "secretRoles"), "items"), "role"), "maxLength", CAPS.secretName],
    ["PluginGrant spec.secretRoles[].secret", props(at(props(grantSpec, "secretRoles"), "items"), "secret"), "maxLength", CAPS.secretName],
    ["PluginGrant spec.dataTiers", props(grantSpec, "dataTiers"), "maxItems", CAPS.listItems],
    ...policyRuleCaps("Plugin manifest.rbac", props(manifest, "rbac")),
    ...policyRuleCaps("PluginGrant spec.rbac", props(grantSpec, "rbac")),
    ["Plugin manifest.ui.entry", props(manifest, "ui", "entry"), "maxLength", CAPS.uiEntry],
  ])("%s", (_field, node, keyword, cap) => {
    expect(node[keyword]).toBe(cap);
  });

  it.each<[string, Node]>([
    ["Plugin manifest.dataTiers[]", at(props(manifest, "dataTiers"), "items")],
    ["PluginGrant spec.dataTiers[]", at(props(grantSpec, "dataTiers"), "items")],
  ])("%s allows data tiers of 1 to the cap's characters", (_field, node) => {
    expect(node["pattern"]).toBe(`^[A-Za-z0-9_-]{1,${CAPS.dataTier}}$`);
  });

  it.each<[string, Node]>([
    ["Plugin", plugin],
    ["PluginGrant", grant],
  ])("%s names are capped at the plugin name's cap", (_kind, node) => {
    expect(node["x-kubernetes-validations"]).toContainEqual(expect.objectContaining({ rule: `self.metadata.name.size() <= ${CAPS.pluginName}` }));
  });

  it.each<[string, Node]>([
    ["Plugin manifest.capabilities", props(manifest, "capabilities")],
    ["PluginGrant spec.capabilities", props(grantSpec, "capabilities")],
  ])("%s is a set of known values, so never longer than the list cap", (_field, node) => {
    expect(node["x-kubernetes-list-type"]).toBe("set");
    expect((at(node, "items")["enum"] as unknown[]).length).toBeLessThanOrEqual(CAPS.listItems);
  });
});
