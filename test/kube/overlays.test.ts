/**
 * deploy/overlays/postgres as kustomize renders it (`kubectl kustomize`, the kustomize built into
 * kubectl): every object valid against Kubernetes' OpenAPI schemas (kubernetes-models 4.5.1), no
 * component keeping a log on a volume, every log writer reading the URL from the `openfief-store`
 * Secret as a file, the replicas and disruption budgets of HA, NetworkPolicies to PostgreSQL, and
 * the console's least-privilege RBAC (reviews, impersonation of users, groups and uids only).
 */
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { CustomResourceDefinition } from "kubernetes-models/apiextensions.k8s.io/v1";
import { Deployment } from "kubernetes-models/apps/v1";
import { NetworkPolicy } from "kubernetes-models/networking.k8s.io/v1";
import { PodDisruptionBudget } from "kubernetes-models/policy/v1";
import { ClusterRole, ClusterRoleBinding, Role, RoleBinding } from "kubernetes-models/rbac.authorization.k8s.io/v1";
import { ConfigMap, Namespace, PersistentVolumeClaim, Service, ServiceAccount } from "kubernetes-models/v1";
import { describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";

const OVERLAY = join(import.meta.dirname, "../../deploy/overlays/postgres");

type Obj = Record<string, unknown> & { apiVersion: string; kind: string; metadata: { name: string; namespace?: string; labels?: Record<string, string> } };
type Container = { name: string; args?: string[]; env?: Array<{ name: string; value?: string }>; volumeMounts?: Array<{ name: string; mountPath: string; readOnly?: boolean }>; securityContext?: unknown };
type Pod = { containers: Container[]; volumes?: Array<Record<string, unknown> & { name: string }>; securityContext?: unknown; serviceAccountName?: string };

const RENDERED: Obj[] = parseAllDocuments(execFileSync("kubectl", ["kustomize", OVERLAY], { encoding: "utf8", timeout: 30_000 }))
  .map((d) => d.toJS() as Obj | null)
  .filter((o): o is Obj => o !== null);

type Validatable = { validate(): void };
const MODELS: Record<string, new (obj: never) => Validatable> = {
  "apiextensions.k8s.io/v1/CustomResourceDefinition": CustomResourceDefinition,
  "apps/v1/Deployment": Deployment,
  "policy/v1/PodDisruptionBudget": PodDisruptionBudget,
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

function find(kind: string, name: string): Obj {
  const o = RENDERED.find((d) => d.kind === kind && d.metadata.name === name);
  if (o === undefined) throw new Error(`the overlay renders no ${kind} ${name}`);
  return o;
}
const spec = (o: Obj) => o["spec"] as Record<string, unknown>;
const pod = (o: Obj) => (spec(o)["template"] as { spec: Pod }).spec;
const podLabels = (o: Obj) => (spec(o)["template"] as { metadata: { labels: Record<string, string> } }).metadata.labels;

/** The components that append to the shared log. */
const WRITERS = ["openfief-operator", "openfief-egress-proxy", "openfief-plugin-host", "openfief-console"];

describe("deploy/overlays/postgres", () => {
  it("renders every object, each valid against Kubernetes' OpenAPI schema", () => {
    expect(RENDERED.length).toBeGreaterThanOrEqual(30);
    for (const o of RENDERED) {
      const Model = MODELS[`${o.apiVersion}/${o.kind}`];
      expect(Model, `${o.apiVersion} ${o.kind}`).toBeDefined();
      expect(() => new (Model as NonNullable<typeof Model>)(o as never).validate(), `${o.kind} ${o.metadata.name}`).not.toThrow();
      // No strategic-merge directive left in what is applied.
      expect(JSON.stringify(o), `${o.kind} ${o.metadata.name}`).not.toMatch(/"\$(patch|retainKeys|setElementOrder)/);
    }
  });

  it("puts every namespaced object in openfief", () => {
    for (const o of RENDERED) {
      if (["CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding", "Namespace"].includes(o.kind)) continue;
      expect(o.metadata.namespace, `${o.kind} ${o.metadata.name}`).toBe("openfief");
    }
  });

  it("keeps no log on a volume: no PersistentVolumeClaim, no --store flag", () => {
    expect(RENDERED.filter((o) => o.kind === "PersistentVolumeClaim")).toEqual([]);
    for (const o of RENDERED.filter((d) => d.kind === "Deployment")) {
      const p = pod(o);
      expect(p.volumes?.filter((v) => "persistentVolumeClaim" in v) ?? [], o.metadata.name).toEqual([]);
      for (const c of p.containers) expect(c.args ?? [], o.metadata.name).not.toContain("--store");
    }
  });

  it.each(WRITERS)("lets %s read the log's URL from the openfief-store Secret, as a read-only file", (name) => {
    const p = pod(find("Deployment", name));
    const c = p.containers[0] as Container;
    const file = c.env?.find((e) => e.name === "OPENFIEF_STORE_FILE")?.value ?? "";
    expect(c.env?.map((e) => e.name)).not.toContain("OPENFIEF_STORE");
    const mount = c.volumeMounts?.find((m) => file.startsWith(`${m.mountPath}/`));
    expect(mount, file).toMatchObject({ name: "openfief-store", readOnly: true });
    expect(p.volumes).toContainEqual({ name: "openfief-store", secret: { secretName: "openfief-store", defaultMode: 0o400, items: [{ key: "url", path: file.slice((mount?.mountPath.length ?? 0) + 1) }] } });
  });

  it("gives the log's signing key to the operators only (the leader signs checkpoints)", () => {
    for (const name of WRITERS) {
      const p = pod(find("Deployment", name));
      const keyed = (p.containers[0]?.env ?? []).some((e) => e.name === "OPENFIEF_LOG_KEY_FILE");
      expect(keyed, name).toBe(name === "openfief-operator");
      expect(p.volumes?.some((v) => v.name === "openfief-log-key"), name).toBe(name === "openfief-operator");
    }
    expect(pod(find("Deployment", "openfief-operator")).volumes).toContainEqual({ name: "openfief-log-key", secret: { secretName: "openfief-log-key", optional: true, defaultMode: 0o400, items: [{ key: "key", path: "key" }] } });
  });

  it.each(WRITERS)("runs %s non-root, read-only, without capabilities or escalation", (name) => {
    const p = pod(find("Deployment", name));
    expect(p.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 65532, seccompProfile: { type: "RuntimeDefault" } });
    for (const c of p.containers) {
      expect(c.securityContext).toEqual({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, runAsNonRoot: true, capabilities: { drop: ["ALL"] }, seccompProfile: { type: "RuntimeDefault" } });
    }
  });

  it("runs two operators, two or more proxies and two consoles, rolling", () => {
    expect(spec(find("Deployment", "openfief-operator"))["replicas"]).toBe(2);
    expect(spec(find("Deployment", "openfief-egress-proxy"))["replicas"]).toBeGreaterThanOrEqual(2);
    expect(spec(find("Deployment", "openfief-console"))["replicas"]).toBe(2);
    for (const name of ["openfief-operator", "openfief-egress-proxy", "openfief-console"]) {
      expect((spec(find("Deployment", name))["strategy"] as { type: string }).type, name).toBe("RollingUpdate");
    }
    // Each proxy names itself in the decisions it records.
    expect(pod(find("Deployment", "openfief-egress-proxy")).containers[0]?.env?.map((e) => e.name)).toContain("POD_NAME");
  });

  it.each(["openfief-operator", "openfief-egress-proxy", "openfief-console"])("keeps one %s through a voluntary disruption", (name) => {
    const pdb = spec(find("PodDisruptionBudget", name));
    expect(pdb["minAvailable"]).toBe(1);
    const selector = (pdb["selector"] as { matchLabels: Record<string, string> }).matchLabels;
    expect(podLabels(find("Deployment", name))).toMatchObject(selector);
    expect(spec(find("Deployment", name))["replicas"]).toBeGreaterThan(1);
  });

  it.each(["openfief-plugin-host-postgres", "openfief-console"])("%s lets the confined pods reach PostgreSQL on 5432 and the cluster's DNS", (name) => {
    const np = spec(find("NetworkPolicy", name)) as { policyTypes: string[]; egress: Array<{ to: Array<Record<string, unknown>>; ports: Array<{ port: number; protocol: string }> }> };
    expect(np.policyTypes).toContain("Egress");
    const pg = np.egress.find((r) => r.ports.some((p) => p.port === 5432));
    expect(pg?.to).toEqual([{ namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "postgres" } }, podSelector: { matchLabels: { "app.kubernetes.io/name": "postgresql" } } }]);
    const dns = np.egress.find((r) => r.ports.some((p) => p.port === 53));
    expect(dns?.to).toEqual([{ namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "kube-system" } }, podSelector: { matchLabels: { "k8s-app": "kube-dns" } } }]);
    for (const rule of np.egress) expect(rule.ports.length).toBeGreaterThan(0);
  });

  describe("the console's rights", () => {
    const rulesOf = (kind: string, name: string) => find(kind, name)["rules"] as Array<{ apiGroups: string[]; resources: string[]; verbs: string[]; resourceNames?: string[] }>;

    it("reviews tokens and access, and nothing else cluster-wide but impersonation", () => {
      expect(rulesOf("ClusterRole", "openfief-console-reviews")).toEqual([
        { apiGroups: ["authentication.k8s.io"], resources: ["tokenreviews"], verbs: ["create"] },
        { apiGroups: ["authorization.k8s.io"], resources: ["subjectaccessreviews"], verbs: ["create"] },
      ]);
      const bound = RENDERED.filter((o) => o.kind === "ClusterRoleBinding" && (o["subjects"] as Array<{ name: string }>).some((s) => s.name === "openfief-console"));
      expect(bound.map((b) => (b["roleRef"] as { name: string }).name).sort()).toEqual(["openfief-console-impersonate", "openfief-console-reviews"]);
    });

    it("impersonates users, groups and uids, never ServiceAccounts, with no wildcard", () => {
      const rules = rulesOf("ClusterRole", "openfief-console-impersonate");
      expect(rules).toEqual([
        { apiGroups: [""], resources: ["users", "groups"], verbs: ["impersonate"] },
        { apiGroups: ["authentication.k8s.io"], resources: ["uids"], verbs: ["impersonate"] },
      ]);
      expect(rules.flatMap((r) => [...r.resources, ...r.verbs, ...r.apiGroups])).not.toContain("*");
      expect(rules.flatMap((r) => r.resources)).not.toContain("serviceaccounts");
    });

    it("may only read PluginGrants and the log's public key itself: approvals are written as the user, the log's Secret is never read", () => {
      expect(rulesOf("Role", "openfief-console")).toEqual([
        { apiGroups: ["openfief.io"], resources: ["plugingrants"], verbs: ["get"] },
        { apiGroups: [""], resources: ["configmaps"], resourceNames: ["openfief-log-verifier"], verbs: ["get"] },
      ]);
      const mounts = JSON.stringify(pod(find("Deployment", "openfief-console")));
      expect(mounts).not.toContain("openfief-log-key");
      expect(pod(find("Deployment", "openfief-console")).serviceAccountName).toBe("openfief-console");
    });

    it("ships the viewer's and the owner's roles the console's reviews ask about", () => {
      const can = (role: string, verb: string, resource: string) => rulesOf("ClusterRole", role).some((r) => r.apiGroups.includes("openfief.io") && r.resources.includes(resource) && r.verbs.includes(verb));
      expect(can("openfief-viewer", "get", "plugins")).toBe(true);
      expect(can("openfief-viewer", "update", "plugingrants")).toBe(false);
      expect(can("openfief-owner", "get", "plugins")).toBe(true);
      expect(can("openfief-owner", "update", "plugingrants")).toBe(true);
      expect(can("openfief-owner", "patch", "plugingrants")).toBe(true);
    });
  });

  it("serves the console over TLS only, its probes at the origin it answers", () => {
    const c = pod(find("Deployment", "openfief-console")).containers[0] as Container & { readinessProbe: { httpGet: { scheme: string; httpHeaders: Array<{ name: string; value: string }> } } };
    const args = c.args ?? [];
    expect(args.slice(0, 3)).toEqual(["console", "--listen", "0.0.0.0:4780"]);
    expect(args).toContain("--tls-cert");
    expect(args).toContain("--tls-key");
    const origin = args[args.indexOf("--origin") + 1] ?? "";
    expect(c.readinessProbe.httpGet.scheme).toBe("HTTPS");
    expect(`https://${c.readinessProbe.httpGet.httpHeaders.find((h) => h.name === "Host")?.value ?? ""}`).toBe(origin);
    expect(spec(find("Service", "openfief-console"))["sessionAffinity"]).toBe("ClientIP");
  });
});
