/**
 * Who plays the core in a cluster, as the deploy base says it (docs/adr/0198): the operator's pods
 * carry the topology's core labels, the `openfief-core` Service and ServiceAccount are the
 * topology's address and subject, the plugin host admits exactly those pods and that subject, and
 * the core's ServiceAccount holds no RBAC of its own.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { parseAllDocuments, parse as parseYaml } from "yaml";
import { coreAccount, coreListenFromEnv, topologyFromEnv } from "../../src/compose/index.js";
import { NAMESPACE } from "../../src/plugins/index.js";

type Obj = Record<string, unknown> & { kind: string; metadata: { name: string; labels?: Record<string, string> } };
const read = (path: string): string => readFileSync(fileURLToPath(new URL(`../../deploy/${path}`, import.meta.url)), "utf8");
const docs = (file: string): Obj[] => parseAllDocuments(read(`base/${file}`)).map((d) => d.toJS() as Obj).filter((o) => o !== null);
const one = (file: string, kind: string, name?: string): Obj => {
  const found = docs(file).find((o) => o.kind === kind && (name === undefined || o.metadata.name === name));
  if (found === undefined) throw new Error(`no ${kind} ${name ?? ""} in ${file}`);
  return found;
};

interface PodSpec { template: { metadata: { labels: Record<string, string> }; spec: { containers: Array<{ args?: string[]; env?: Array<{ name: string; value?: string }>; ports?: Array<{ name: string; containerPort: number }> }> } } }
const operator = one("operator.yaml", "Deployment")["spec"] as PodSpec;
const topology = topologyFromEnv({ OPENFIEF_TOPOLOGY: operator.template.spec.containers[0]?.env?.find((e) => e.name === "OPENFIEF_TOPOLOGY")?.value });

function argAfter(args: readonly string[] | undefined, flag: string): string | undefined {
  const i = (args ?? []).indexOf(flag);
  return i < 0 ? undefined : args?.[i + 1];
}

describe("the core in the deploy base", () => {
  it("is the operator's pods: they carry the topology's core labels", () => {
    expect(operator.template.metadata.labels).toMatchObject(topology.core.podLabels);
    expect(Object.keys(topology.core.podLabels)).not.toContain("app.kubernetes.io/name");
  });

  it("is reached at the openfief-core Service, the topology's pinned address and port, selecting those pods", () => {
    const spec = one("core.yaml", "Service", "openfief-core")["spec"] as { clusterIP: string; selector: Record<string, string>; ports: Array<{ port: number; targetPort: number }> };
    expect(spec.clusterIP).toBe(topology.core.clusterIP);
    expect(spec.selector).toEqual(topology.core.podLabels);
    expect(spec.ports).toEqual([expect.objectContaining({ port: topology.core.port, targetPort: topology.core.podPort })]);
  });

  it("calls as the openfief-core ServiceAccount, which mounts no token and is bound to no role", () => {
    expect(coreAccount(topology.coreSubject)).toEqual({ namespace: NAMESPACE, name: "openfief-core" });
    expect(one("core.yaml", "ServiceAccount", "openfief-core")["automountServiceAccountToken"]).toBe(false);
    const files = ["operator-rbac.yaml", "egress-proxy-rbac.yaml", "plugin-host.yaml", "operator.yaml", "egress-proxy.yaml", "core.yaml"];
    const bindings = files.flatMap(docs).filter((o) => o.kind === "RoleBinding" || o.kind === "ClusterRoleBinding");
    expect(bindings.length).toBeGreaterThan(0);
    for (const b of bindings) expect(JSON.stringify(b["subjects"])).not.toContain("openfief-core");
  });

  it("has its tokens asked for by the operator, by name", () => {
    const rules = one("operator-rbac.yaml", "Role", "openfief-operator")["rules"] as Array<Record<string, string[] | undefined>>;
    expect(rules).toContainEqual({ apiGroups: [""], resources: ["serviceaccounts/token"], resourceNames: ["openfief-core"], verbs: ["create"] });
  });

  it("is the only caller the plugin host admits: its NetworkPolicy selects the core's pods, --core-subject names the core", () => {
    const policy = one("plugin-host.yaml", "NetworkPolicy", "openfief-plugin-host")["spec"] as { ingress: Array<{ from: Array<{ podSelector: { matchLabels: Record<string, string> } }> }> };
    expect(policy.ingress.map((r) => r.from.map((f) => f.podSelector.matchLabels))).toEqual([[topology.core.podLabels]]);
    const host = one("plugin-host.yaml", "Deployment")["spec"] as PodSpec;
    expect(argAfter(host.template.spec.containers[0]?.args, "--core-subject")).toBe(topology.coreSubject);
    // The postgres overlay replaces the host's arguments: it names the same subject.
    const overlay = parseYaml(read("overlays/postgres/kustomization.yaml")) as { patches: Array<{ target?: { name?: string }; patch?: string }> };
    const patch = overlay.patches.find((p) => p.target?.name === "openfief-plugin-host" && p.patch !== undefined);
    const replaced = (parseYaml(patch?.patch ?? "[]") as Array<{ value?: string[] }>)[0]?.value;
    expect(argAfter(replaced, "--core-subject")).toBe(topology.coreSubject);
  });

  it("serves the core's API on the port the Service sends plugins to, checking their tokens by TokenReview", () => {
    const container = operator.template.spec.containers[0];
    const listen = coreListenFromEnv({ OPENFIEF_CORE_LISTEN: container?.env?.find((e) => e.name === "OPENFIEF_CORE_LISTEN")?.value });
    expect(listen).toEqual({ host: "0.0.0.0", port: topology.core.podPort });
    expect(container?.ports).toContainEqual(expect.objectContaining({ name: "core", containerPort: topology.core.podPort }));
    const role = one("operator-rbac.yaml", "ClusterRole", "openfief-operator-tokenreview")["rules"];
    expect(role).toEqual([{ apiGroups: ["authentication.k8s.io"], resources: ["tokenreviews"], verbs: ["create"] }]);
    const binding = one("operator-rbac.yaml", "ClusterRoleBinding", "openfief-operator-tokenreview");
    expect(binding["roleRef"]).toMatchObject({ kind: "ClusterRole", name: "openfief-operator-tokenreview" });
    expect(binding["subjects"]).toEqual([{ kind: "ServiceAccount", name: "openfief-operator", namespace: NAMESPACE }]);
  });
});

describe("the core's listening address", () => {
  it.each([
    [{}, null],
    [{ OPENFIEF_CORE_LISTEN: "" }, null],
    [{ OPENFIEF_CORE_LISTEN: "0.0.0.0:8443" }, { host: "0.0.0.0", port: 8443 }],
    [{ OPENFIEF_CORE_LISTEN: "[::1]:9" }, { host: "::1", port: 9 }],
    [{ OPENFIEF_CORE_LISTEN: "127.0.0.1:65535" }, { host: "127.0.0.1", port: 65535 }],
  ])("%j is read as %j", (env, want) => {
    expect(coreListenFromEnv(env)).toEqual(want);
  });

  it.each(["8443", "0.0.0.0:", "0.0.0.0:0", "0.0.0.0:70000", "host name:1", ":8443"])("%j is refused with a one-line error naming the variable", (raw) => {
    expect(() => coreListenFromEnv({ OPENFIEF_CORE_LISTEN: raw })).toThrow(/^OPENFIEF_CORE_LISTEN must be HOST:PORT/);
  });
});
