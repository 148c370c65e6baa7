/**
 * The view contract's fields survive the API server: the CRDs admit a view plugin's `rbac` and
 * `ui`, a grant's `rbac`, and a status with rules pending (a structural schema would otherwise
 * prune them, and the manifest would no longer equal its signed label).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Ajv } from "ajv";
import { describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { pluginStatus } from "../../src/kube/index.js";
import { needsApproval, parseGrant, parseManifest } from "../../src/plugins/index.js";
import { toJsonSchema } from "../support/crd-schema.js";
import { GRANT, IMAGE, MANIFEST, PLUGIN } from "./support.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

function validator(file: string, part: "spec" | "status" | null = null) {
  const crd = parseYaml(readFileSync(join(ROOT, "deploy/crds", file), "utf8")) as { spec: { versions: Array<{ schema: { openAPIV3Schema: { properties: Record<string, unknown> } } }> } };
  const schema = crd.spec.versions[0]?.schema.openAPIV3Schema;
  return new Ajv({ allErrors: true, strict: false }).compile(toJsonSchema(part === null ? schema : schema?.properties[part]) as object);
}

describe("the CRDs", () => {
  it("admit a view plugin with rules and a UI bundle", () => {
    const v = validator("plugins.openfief.io.yaml");
    const plugin = { apiVersion: "openfief.io/v1alpha1", kind: "Plugin", metadata: { name: PLUGIN, namespace: "openfief" }, spec: { image: IMAGE, manifest: MANIFEST } };
    expect(v(plugin), JSON.stringify(v.errors)).toBe(true);
  });

  it("admit a grant of rules", () => {
    const v = validator("plugingrants.openfief.io.yaml");
    const grant = { apiVersion: "openfief.io/v1alpha1", kind: "PluginGrant", metadata: { name: PLUGIN, namespace: "openfief" }, spec: GRANT };
    expect(v(grant), JSON.stringify(v.errors)).toBe(true);
  });

  it("admit a status naming the rules pending approval, and say so in its condition", () => {
    const m = parseManifest(MANIFEST);
    const g = parseGrant({ name: PLUGIN, spec: { capabilities: ["view"] } });
    if (!m.ok || !g.ok) throw new Error("parse");
    const status = pluginStatus({ generation: 1, deployed: null, pending: needsApproval(m.value, g.value.spec), signature: { kind: "unknown" }, now: "2026-12-01T00:00:00Z" });
    expect(status.pendingApproval?.rbac).toHaveLength(MANIFEST.rbac.length);
    expect(status.conditions.find((c) => c.type === "ApprovalRequired")?.message).toContain("rbac rule");
    const v = validator("plugins.openfief.io.yaml", "status");
    expect(v(JSON.parse(JSON.stringify(status))), JSON.stringify(v.errors)).toBe(true);
  });

  it("refuse a rule without verbs, as the model does", () => {
    const v = validator("plugins.openfief.io.yaml");
    const plugin = { apiVersion: "openfief.io/v1alpha1", kind: "Plugin", metadata: { name: PLUGIN, namespace: "openfief" }, spec: { image: IMAGE, manifest: { ...MANIFEST, rbac: [{ apiGroups: [""], resources: ["pods"] }] } } };
    expect(v(plugin)).toBe(false);
  });
});
