/**
 * Every manifest under deploy/ checked against Kubernetes' OpenAPI schemas (kubernetes-models
 * 4.5.1), the security rules of the seeds, and the CRDs' own schemas against sample resources and
 * against the status the operator writes.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { Ajv } from "ajv";
import { CustomResourceDefinition } from "kubernetes-models/apiextensions.k8s.io/v1";
import { Deployment } from "kubernetes-models/apps/v1";
import { ClusterRole, ClusterRoleBinding, Role, RoleBinding } from "kubernetes-models/rbac.authorization.k8s.io/v1";
import { NetworkPolicy } from "kubernetes-models/networking.k8s.io/v1";
import { ConfigMap, Namespace, PersistentVolumeClaim, Service, ServiceAccount } from "kubernetes-models/v1";
import { describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import { EMPTY_PENDING } from "../../src/plugins/effective.js";
import { pluginStatus } from "../../src/kube/status.js";
import { PLUGIN_HOST_POD_LABELS, PLUGIN_LABEL } from "../../src/plugins/index.js";
import { toJsonSchema } from "../support/crd-schema.js";

const ROOT = join(import.meta.dirname, "../../deploy");

interface Doc {
  readonly file: string;
  readonly obj: Record<string, unknown> & { apiVersion: string; kind: string; metadata: { name: string; namespace?: string } };
}

function yamlFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return yamlFiles(path);
    return /\.ya?ml$/.test(name) ? [path] : [];
  });
}

const KUSTOMIZATIONS = yamlFiles(ROOT).filter((f) => /kustomization\.ya?ml$/.test(f));
// The overlays hold patches, not whole objects: test/kube/overlays.test.ts checks what they render.
const DOCS: Doc[] = yamlFiles(ROOT)
  .filter((f) => !KUSTOMIZATIONS.includes(f) && !relative(ROOT, f).startsWith("overlays"))
  .flatMap((file) =>
    parseAllDocuments(readFileSync(file, "utf8"))
      .map((d) => d.toJS() as Doc["obj"] | null)
      .filter((o): o is Doc["obj"] => o !== null)
      .map((obj) => ({ file: relative(ROOT, file), obj })),
  );

type Validatable = { validate(): void };
const MODELS: Record<string, new (obj: never) => Validatable> = {
  "apiextensions.k8s.io/v1/CustomResourceDefinition": CustomResourceDefinition,
  "apps/v1/Deployment": Deployment,
  "rbac.authorization.k8s.io/v1/ClusterRole": ClusterRole,
  "rbac.authorization.k8s.io/v1/ClusterRoleBinding": ClusterRoleBinding,
  "rbac.authorization.k8s.io/v1/Role": Role,
  "rbac.authorization.k8s.io/v1/RoleBinding": RoleBinding,
  "networking.k8s.io/v1/NetworkPolicy": NetworkPolicy,
  "v1/ConfigMap": ConfigMap,
  "v1/Namespace": Namespace,
  "v1/PersistentVolumeClaim": PersistentVolumeClaim,
  "v1/Service": Service,
  "v1/ServiceAccount": ServiceAccount,
};

function validateK8s(obj: Doc["obj"]): void {
  const Model = MODELS[`${obj.apiVersion}/${obj.kind}`];
  if (Model === undefined) throw new Error(`no schema for ${obj.apiVersion} ${obj.kind}`);
  new Model(obj as never).validate();
}

function find(kind: string, name: string): Doc["obj"] {
  const doc = DOCS.find((d) => d.obj.kind === kind && d.obj.metadata.name === name);
  if (doc === undefined) throw new Error(`no ${kind} ${name} under deploy/`);
  return doc.obj;
}

type Container = { image: string; securityContext?: Record<string, unknown>; ports?: Array<{ containerPort: number }> };
function podSpec(deployment: Doc["obj"]): { securityContext?: Record<string, unknown>; containers: Container[]; volumes?: Array<Record<string, unknown>> } {
  return (deployment["spec"] as { template: { spec: ReturnType<typeof podSpec> } }).template.spec;
}


function envOf(deployment: Doc["obj"], name: string): string {
  const env = (podSpec(deployment).containers[0] as { env?: Array<{ name: string; value?: string }> }).env ?? [];
  const v = env.find((e) => e.name === name)?.value;
  if (v === undefined) throw new Error(`no ${name} in the Deployment`);
  return v;
}

function crdSchema(name: string): { schema: Record<string, unknown>; crd: Doc["obj"] } {
  const crd = find("CustomResourceDefinition", name);
  const version = (crd["spec"] as { versions: Array<{ schema: { openAPIV3Schema: Record<string, unknown> } }> }).versions[0];
  const schema = toJsonSchema(version?.schema.openAPIV3Schema) as Record<string, unknown>;
  // metadata is validated by the API server itself.
  return { schema, crd };
}

const ajv = new Ajv({ allErrors: true, strict: false });
const validatePlugin = ajv.compile(crdSchema("plugins.openfief.io").schema);
const validateGrant = ajv.compile(crdSchema("plugingrants.openfief.io").schema);
const DIGEST = "a".repeat(64);

function plugin(spec: Record<string, unknown>, status?: unknown): Record<string, unknown> {
  return { apiVersion: "openfief.io/v1alpha1", kind: "Plugin", metadata: { name: "nbp-fx" }, spec, ...(status === undefined ? {} : { status }) };
}

describe("the manifests under deploy/", () => {
  it("are many, so a broken glob cannot pass silently", () => {
    expect(DOCS.length).toBeGreaterThanOrEqual(15);
  });

  it.each(DOCS.map((d) => [`${d.file}: ${d.obj.kind} ${d.obj.metadata.name}`, d.obj] as const))("%s is valid against Kubernetes' OpenAPI schema", (_name, obj) => {
    expect(() => validateK8s(obj)).not.toThrow();
  });

  it("catch an invalid object (the validator bites)", () => {
    const bad = structuredClone(find("Service", "openfief-egress-proxy")) as Doc["obj"];
    (bad["spec"] as { ports: Array<Record<string, unknown>> }).ports[0]!["port"] = "not-a-port";
    expect(() => validateK8s(bad)).toThrow();
  });

  it("put every namespaced object in openfief", () => {
    for (const { obj } of DOCS) {
      if (["CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding", "Namespace"].includes(obj.kind)) continue;
      expect(obj.metadata.namespace, `${obj.kind} ${obj.metadata.name}`).toBe("openfief");
    }
  });

  it.each(["openfief-operator", "openfief-egress-proxy", "openfief-plugin-host"])("run %s non-root, read-only, without capabilities, escalation or a custom seccomp profile", (name) => {
    const spec = podSpec(find("Deployment", name));
    expect(spec.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 65532, seccompProfile: { type: "RuntimeDefault" } });
    for (const c of spec.containers) {
      expect(c.securityContext).toEqual({
        allowPrivilegeEscalation: false,
        readOnlyRootFilesystem: true,
        runAsNonRoot: true,
        capabilities: { drop: ["ALL"] },
        seccompProfile: { type: "RuntimeDefault" },
      });
      expect(c.image).not.toContain("@");
    }
  });

  it("keep the operator's event store on a persistent volume", () => {
    const spec = podSpec(find("Deployment", "openfief-operator"));
    expect(spec.volumes).toContainEqual({ name: "data", persistentVolumeClaim: { claimName: "openfief-operator-data" } });
    expect(find("PersistentVolumeClaim", "openfief-operator-data")).toBeDefined();
  });

  it("let the operator read the log's signing key from the optional Secret openfief-log-key, as a read-only file", () => {
    const spec = podSpec(find("Deployment", "openfief-operator"));
    const c = spec.containers[0] as Container & { env?: Array<{ name: string; value?: string }>; volumeMounts?: Array<{ name: string; mountPath: string; readOnly?: boolean }> };
    expect(c.env).toContainEqual({ name: "OPENFIEF_LOG_KEY_FILE", value: "/var/run/secrets/openfief-log-key/key" });
    expect(c.volumeMounts).toContainEqual({ name: "openfief-log-key", mountPath: "/var/run/secrets/openfief-log-key", readOnly: true });
    // (0400 is octal to Kubernetes' YAML 1.1; this parser reads YAML 1.2: the rendered overlay's test checks the mode.)
    expect(spec.volumes).toContainEqual({ name: "openfief-log-key", secret: expect.objectContaining({ secretName: "openfief-log-key", optional: true, items: [{ key: "key", path: "key" }] }) });
  });

  it("expose the proxy on 4750 with a numeric targetPort, as the operator copies it into NetworkPolicies", () => {
    const ports = (find("Service", "openfief-egress-proxy")["spec"] as { ports: Array<Record<string, unknown>> }).ports;
    expect(ports).toEqual([{ name: "proxy", port: 4750, targetPort: 4750, protocol: "TCP" }]);
    expect(typeof ports[0]?.["targetPort"]).toBe("number");
  });

  it("let the proxy only create TokenReviews cluster-wide and read only its one ConfigMap", () => {
    const clusterRoles = DOCS.filter((d) => d.obj.kind === "ClusterRole");
    expect(clusterRoles.map((d) => d.obj.metadata.name).sort()).toEqual(["openfief-egress-proxy-tokenreview", "openfief-operator-tokenreview", "openfief-operator-views"]);
    expect(find("ClusterRole", "openfief-egress-proxy-tokenreview")["rules"]).toEqual([{ apiGroups: ["authentication.k8s.io"], resources: ["tokenreviews"], verbs: ["create"] }]);
    const binding = DOCS.filter((d) => d.obj.kind === "ClusterRoleBinding" && d.obj.metadata.name === "openfief-egress-proxy-tokenreview");
    expect(binding.map((d) => d.obj["subjects"])).toEqual([[{ kind: "ServiceAccount", name: "openfief-egress-proxy", namespace: "openfief" }]]);
    expect(find("Role", "openfief-egress-proxy")["rules"]).toEqual([
      { apiGroups: [""], resources: ["configmaps"], resourceNames: ["openfief-egress-allowlist"], verbs: ["get", "list", "watch"] },
    ]);
  });

  it("let the operator manage cluster-wide only views' ClusterRoles and bindings and review users", () => {
    const rules = find("ClusterRole", "openfief-operator-views")["rules"] as Array<{ apiGroups: string[]; resources: string[]; verbs: string[] }>;
    expect(rules.flatMap((r) => r.resources).sort()).toEqual(["clusterrolebindings", "clusterroles", "clusterroles", "subjectaccessreviews"]);
    expect(rules.flatMap((r) => [...r.resources, ...r.verbs, ...r.apiGroups])).not.toContain("*");
    expect(find("ClusterRoleBinding", "openfief-operator-views")["subjects"]).toEqual([{ kind: "ServiceAccount", name: "openfief-operator", namespace: "openfief" }]);
  });

  it("confine the operator to openfief: a Role, never a Secret, never a wildcard", () => {
    const rules = find("Role", "openfief-operator")["rules"] as Array<{ resources: string[]; verbs: string[]; apiGroups: string[] }>;
    const flat = rules.flatMap((r) => [...r.resources, ...r.verbs, ...r.apiGroups]);
    expect(flat).not.toContain("*");
    expect(flat).not.toContain("secrets");
    expect(find("RoleBinding", "openfief-operator")["subjects"]).toEqual([{ kind: "ServiceAccount", name: "openfief-operator", namespace: "openfief" }]);
  });

  describe("the plugin host", () => {
    const policy = find("NetworkPolicy", "openfief-plugin-host")["spec"] as {
      podSelector: { matchLabels: Record<string, string> };
      policyTypes: string[];
      ingress: Array<{ from: unknown[]; ports: Array<{ port: number; protocol: string }> }>;
      egress: Array<{ to: Array<Record<string, unknown>>; ports: Array<{ port: number; protocol: string }> }>;
    };
    const pod = (find("Deployment", "openfief-plugin-host")["spec"] as { template: { metadata: { labels: Record<string, string> } } }).template.metadata.labels;

    it("is in the kustomize base", () => {
      const k = parseAllDocuments(readFileSync(join(ROOT, "base", "kustomization.yaml"), "utf8"))[0]?.toJS() as { resources: string[] };
      expect(k.resources).toContain("plugin-host.yaml");
    });

    it("runs pods the plugins' Services select, which never carry the plugin label", () => {
      expect(pod).toEqual(PLUGIN_HOST_POD_LABELS);
      expect(Object.keys(pod)).not.toContain(PLUGIN_LABEL);
      expect(policy.podSelector.matchLabels).toEqual(PLUGIN_HOST_POD_LABELS);
    });

    it("serves the plugin port OPENFIEF_TOPOLOGY names, and admits only the core's pods to it", () => {
      const topology = JSON.parse(envOf(find("Deployment", "openfief-operator"), "OPENFIEF_TOPOLOGY")) as { pluginPort: number; core: { podLabels: Record<string, string> } };
      expect(podSpec(find("Deployment", "openfief-plugin-host")).containers[0]?.ports).toContainEqual(expect.objectContaining({ containerPort: topology.pluginPort }));
      expect(policy.policyTypes).toEqual(["Ingress", "Egress"]);
      expect(policy.ingress).toEqual([
        { from: [{ podSelector: { matchExpressions: [{ key: PLUGIN_LABEL, operator: "DoesNotExist" }], matchLabels: topology.core.podLabels } }], ports: [{ port: topology.pluginPort, protocol: "TCP" }] },
      ]);
    });

    it("reaches out only to the egress proxy's pod port and the API server's port, never DNS", () => {
      const ports = policy.egress.flatMap((r) => r.ports.map((p) => p.port)).sort((a, b) => a - b);
      expect(ports).toEqual([4750, 6443]);
      expect(policy.egress[0]?.to).toEqual([{ podSelector: { matchExpressions: [{ key: PLUGIN_LABEL, operator: "DoesNotExist" }], matchLabels: { "app.kubernetes.io/name": "openfief-egress-proxy" } } }]);
      for (const rule of policy.egress) expect(rule.ports.length).toBeGreaterThan(0);
    });

    it("may read only its one ConfigMap and mint tokens only for the ServiceAccounts the operator names", () => {
      expect(find("Role", "openfief-plugin-host")["rules"]).toEqual([{ apiGroups: [""], resources: ["configmaps"], resourceNames: ["openfief-plugin-host"], verbs: ["get", "list", "watch"] }]);
      // Shipped without a rule: a rule without resourceNames would cover every ServiceAccount.
      expect(find("Role", "openfief-plugin-host-tokens")["rules"]).toEqual([]);
      // Likewise its Secrets Role: a rule without resourceNames would cover every Secret.
      expect(find("Role", "openfief-plugin-host-secrets")["rules"]).toEqual([]);
      for (const name of ["openfief-plugin-host", "openfief-plugin-host-tokens", "openfief-plugin-host-secrets"]) {
        expect(find("RoleBinding", name)["subjects"]).toEqual([{ kind: "ServiceAccount", name: "openfief-plugin-host", namespace: "openfief" }]);
      }
      const operatorRoles = (find("Role", "openfief-operator")["rules"] as Array<{ resources: string[]; resourceNames?: string[]; verbs: string[] }>).filter((r) => r.resources.includes("roles"));
      expect(operatorRoles).toEqual([
        { apiGroups: ["rbac.authorization.k8s.io"], resources: ["roles"], resourceNames: ["openfief-plugin-host-tokens", "openfief-plugin-host-secrets"], verbs: ["get", "patch"] },
        { apiGroups: ["rbac.authorization.k8s.io"], resources: ["roles"], resourceNames: ["openfief-plugin-host-secrets"], verbs: ["escalate"] },
      ]);
    });

    it("keeps its own event store on a persistent volume and mounts the cluster's keys whole", () => {
      const spec = podSpec(find("Deployment", "openfief-plugin-host"));
      expect(spec.volumes).toContainEqual({ name: "data", persistentVolumeClaim: { claimName: "openfief-plugin-host-data" } });
      expect(spec.volumes).toContainEqual(expect.objectContaining({ name: "openfief-sa-jwks", configMap: expect.objectContaining({ name: "openfief-sa-jwks" }) }));
      expect(find("PersistentVolumeClaim", "openfief-plugin-host-data")).toBeDefined();
    });
  });

  it.each(KUSTOMIZATIONS.map((f) => [relative(ROOT, f), f]))("%s lists only files that exist", (_name, file) => {
    const k = parseAllDocuments(readFileSync(file, "utf8"))[0]?.toJS() as { resources: string[] };
    for (const r of k.resources) expect(() => statSync(join(file, "..", r)), r).not.toThrow();
  });
});

describe("the CRDs", () => {
  it.each(["plugins.openfief.io", "plugingrants.openfief.io"])("%s caps the name at 56 characters with a CEL rule and has a status subresource", (name) => {
    const crd = find("CustomResourceDefinition", name);
    const version = (crd["spec"] as { versions: Array<Record<string, unknown>> }).versions[0] as Record<string, unknown>;
    expect(version["subresources"]).toEqual({ status: {} });
    const root = (version["schema"] as { openAPIV3Schema: Record<string, unknown> }).openAPIV3Schema;
    expect(root["x-kubernetes-validations"]).toContainEqual(expect.objectContaining({ rule: "self.metadata.name.size() <= 56" }));
  });

  it("show Image, Deployed, Pending, Verified and Age for Plugins", () => {
    const version = (find("CustomResourceDefinition", "plugins.openfief.io")["spec"] as { versions: Array<{ additionalPrinterColumns: Array<{ name: string }> }> }).versions[0];
    expect(version?.additionalPrinterColumns.map((c) => c.name)).toEqual(["Image", "Deployed", "Pending", "Verified", "Age"]);
  });

  const manifest = { capabilities: ["connector"], egress: [{ host: "api.nbp.pl", port: 443 }], secrets: [{ name: "creds", mountPath: "/etc/creds" }], dataTiers: ["t1"], configSchema: { type: "object" } };
  it.each<[string, Record<string, unknown>, boolean]>([
    ["a full Plugin", { image: `ghcr.io/acme/nbp-fx@sha256:${DIGEST}`, manifest, config: { any: ["thing"] } }, true],
    ["an image on a registry with a port", { image: `localhost:5000/nbp-fx@sha256:${DIGEST}`, manifest: { capabilities: ["view"] } }, true],
    ["an image with a tag", { image: `ghcr.io/acme/nbp-fx:1.0@sha256:${DIGEST}`, manifest }, false],
    ["an image with only a tag", { image: "ghcr.io/acme/nbp-fx:1.0", manifest }, false],
    ["a short digest", { image: "ghcr.io/acme/nbp-fx@sha256:abc", manifest }, false],
    ["no capability", { image: `ghcr.io/acme/nbp-fx@sha256:${DIGEST}`, manifest: { capabilities: [] } }, false],
    ["an unknown capability", { image: `ghcr.io/acme/nbp-fx@sha256:${DIGEST}`, manifest: { capabilities: ["admin"] } }, false],
    ["a repeated capability", { image: `ghcr.io/acme/nbp-fx@sha256:${DIGEST}`, manifest: { capabilities: ["view", "view"] } }, false],
    ["a secret without a mount path", { image: `ghcr.io/acme/nbp-fx@sha256:${DIGEST}`, manifest: { capabilities: ["view"], secrets: [{ name: "x" }] } }, false],
    ["no image", { manifest }, false],
  ])("accept %s: %s", (_name, spec, valid) => {
    expect(validatePlugin(plugin(spec)), JSON.stringify(validatePlugin.errors)).toBe(valid);
  });

  it.each<[string, Record<string, unknown>, boolean]>([
    ["a full grant", { capabilities: ["connector"], egress: [{ host: "api.nbp.pl" }], secrets: ["creds"], dataTiers: ["t1"] }, true],
    ["a grant of nothing", { capabilities: [] }, true],
    ["a grant with a secret mount object instead of a name", { capabilities: ["view"], secrets: [{ name: "x" }] }, false],
    ["a port out of range", { capabilities: ["view"], egress: [{ host: "a.b", port: 70000 }] }, false],
  ])("PluginGrant schema on %s: %s", (_name, spec, valid) => {
    expect(validateGrant({ apiVersion: "openfief.io/v1alpha1", kind: "PluginGrant", metadata: { name: "nbp-fx" }, spec }), JSON.stringify(validateGrant.errors)).toBe(valid);
  });

  it.each([
    ["pending with a deployed image", { ...EMPTY_PENDING, egress: [{ host: "api.nbp.pl", port: 443 }] }, { image: `ghcr.io/acme/nbp-fx@sha256:${DIGEST}` }],
    ["nothing pending and nothing deployed", EMPTY_PENDING, null],
  ])("accept the status the operator writes: %s", (_name, pending, deployed) => {
    const status = pluginStatus({ generation: 2, deployed, pending, signature: { kind: "refused", code: "untrusted_signer" }, now: "2026-11-01T10:00:00Z" });
    const spec = { image: `ghcr.io/acme/nbp-fx@sha256:${DIGEST}`, manifest: { capabilities: ["connector"] } };
    expect(validatePlugin(plugin(spec, JSON.parse(JSON.stringify(status)))), JSON.stringify(validatePlugin.errors)).toBe(true);
  });
});
