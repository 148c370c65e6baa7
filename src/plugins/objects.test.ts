import { describe, expect, it } from "vitest";
import { dumpYaml } from "@kubernetes/client-node";
import { parse as parseYaml } from "yaml";
import { ConfigMap, Service, ServiceAccount } from "kubernetes-models/v1";
import { Deployment } from "kubernetes-models/apps/v1";
import { NetworkPolicy } from "kubernetes-models/networking.k8s.io/v1";
import { compile } from "./compile.js";
import type { Topology, Workload } from "./compile.js";
import { CORE_TOKEN_PATH, EGRESS_TOKEN_PATH } from "./constants.js";
import { effective } from "./effective.js";
import { parseImageRef } from "./image-ref.js";
import type { ImageRef } from "./image-ref.js";
import { buildHostedObjects, buildObjects, hostedObjectsToJSON, listObjects, objectToJSON, objectsToJSON, toClientNodeModel } from "./objects.js";
import type { PluginObject } from "./objects.js";
import type { JsonValue, Manifest } from "./types.js";

const IMAGE = ((): ImageRef => {
  const r = parseImageRef(`ghcr.io/openfief/ibkr-flex@sha256:${"0f".repeat(32)}`);
  if (!r.ok) throw new Error("image");
  return r.value;
})();

const TOPOLOGY: Topology = {
  core: { clusterIP: "10.96.0.10", port: 8080, podPort: 8081, podLabels: { "app.kubernetes.io/name": "openfief-core", "app.kubernetes.io/part-of": "openfief" } },
  proxy: { clusterIP: "fd00::14", podPort: 4750, podLabels: { "app.kubernetes.io/name": "openfief-egress" } },
  pluginPort: 9090,
  coreSubject: "system:serviceaccount:openfief:openfief-core",
};

function workload(m: Partial<Manifest>, config?: JsonValue): Workload {
  const manifest: Manifest = { capabilities: ["connector"], egress: [], secrets: [], dataTiers: [], ...m };
  const e = effective(manifest, { capabilities: manifest.capabilities, egress: manifest.egress, secrets: manifest.secrets.map((s) => s.name), dataTiers: manifest.dataTiers });
  if (!e.ok) throw new Error("effective");
  const w = compile(config === undefined ? { name: "ibkr-main", image: IMAGE } : { name: "ibkr-main", image: IMAGE, config }, e.value, TOPOLOGY);
  if (!w.ok) throw new Error(JSON.stringify(w.errors));
  return w.value;
}

const CASES = [
  { name: "without egress, Secrets or config", w: workload({}) },
  { name: "with egress", w: workload({ egress: [{ host: "ndcdyn.interactivebrokers.com", port: 443 }, { host: "api.example.com", port: 8443 }] }) },
  {
    name: "with egress, Secrets, data tiers and config",
    w: workload(
      {
        capabilities: ["view", "connector"],
        egress: [{ host: "api.example.com", port: 443 }],
        secrets: [{ name: "ibkr-flex-credentials", mountPath: "/etc/ibkr" }, { name: "db", mountPath: "/srv/db" }],
        dataTiers: ["raw"],
      },
      { queryId: "123", accounts: ["U1", "U2"], nested: { b: true, a: null } },
    ),
  },
  { name: "with Secrets and config but no egress", w: workload({ secrets: [{ name: "token", mountPath: "/etc/token" }] }, { x: 1 }) },
];

function validateWithKubernetesSchemas(o: PluginObject): void {
  const json = objectToJSON(o) as never;
  switch (o.kind) {
    case "ServiceAccount":
      return new ServiceAccount(json).validate();
    case "ConfigMap":
      return new ConfigMap(json).validate();
    case "Service":
      return new Service(json).validate();
    case "NetworkPolicy":
      return new NetworkPolicy(json).validate();
    case "Deployment":
      return new Deployment(json).validate();
    default:
      throw new Error(`unexpected kind ${String(o.kind)}`);
  }
}

type Json = Record<string, unknown>;
const at = (v: unknown, ...path: (string | number)[]): unknown =>
  path.reduce<unknown>((x, k) => (x === undefined || x === null ? undefined : (x as Record<string | number, unknown>)[k]), v);

describe("buildObjects", () => {
  it.each(CASES)("produces objects that pass Kubernetes' OpenAPI schemas $name", ({ w }) => {
    const objects = listObjects(buildObjects(w));
    expect(objects.map((o) => o.kind)).toEqual(["ServiceAccount", "ConfigMap", "NetworkPolicy", "Service", "Deployment"]);
    for (const o of objects) expect(() => validateWithKubernetesSchemas(o)).not.toThrow();
  });

  it.each(CASES)("writes only fields Kubernetes knows, as client-node serializes them, $name", ({ w }) => {
    // client-node's serializer keeps only the fields of its generated models, so equality proves
    // that no field is misspelt and that a directory target writes what the API client would send.
    for (const o of listObjects(buildObjects(w))) expect(parseYaml(dumpYaml(o))).toEqual(objectToJSON(o));
  });

  it.each(CASES)("puts every object in namespace openfief with the plugin's labels $name", ({ w }) => {
    for (const o of listObjects(buildObjects(w))) {
      expect(o.metadata?.namespace).toBe("openfief");
      expect(o.metadata?.labels).toEqual({
        "app.kubernetes.io/managed-by": "openfief",
        "app.kubernetes.io/name": "ibkr-main",
        "openfief.io/plugin": "ibkr-main",
      });
    }
  });

  it.each(CASES)("denies everything but the compiled rules, and never DNS, $name", ({ w }) => {
    const np = objectToJSON(buildObjects(w).networkPolicy);
    expect(at(np, "spec", "policyTypes")).toEqual(["Ingress", "Egress"]);
    expect(at(np, "spec", "podSelector")).toEqual({ matchLabels: { "openfief.io/plugin": "ibkr-main" } });
    const rules = [...(at(np, "spec", "ingress") as Json[]), ...(at(np, "spec", "egress") as Json[])];
    for (const rule of rules) {
      const peers = (rule["from"] ?? rule["to"]) as Json[];
      // A rule without peers or without ports would allow every source, destination or port.
      expect(peers.length).toBeGreaterThan(0);
      for (const p of peers) {
        expect(p).not.toHaveProperty("ipBlock");
        expect(p).not.toHaveProperty("namespaceSelector");
        expect(at(p, "podSelector", "matchExpressions")).toEqual([{ key: "openfief.io/plugin", operator: "DoesNotExist" }]);
        expect(Object.keys(at(p, "podSelector", "matchLabels") as Json).length).toBeGreaterThan(0);
      }
      const ports = rule["ports"] as Json[];
      expect(ports.length).toBeGreaterThan(0);
      for (const port of ports) {
        expect(port["port"]).not.toBe(53);
        expect(port).not.toHaveProperty("endPort");
        expect(port["protocol"]).toBe("TCP");
      }
    }
    expect(at(np, "spec", "ingress")).toEqual([
      {
        from: [{ podSelector: { matchExpressions: [{ key: "openfief.io/plugin", operator: "DoesNotExist" }], matchLabels: TOPOLOGY.core.podLabels } }],
        ports: [{ port: 9090, protocol: "TCP" }],
      },
    ]);
    const egressPorts = (at(np, "spec", "egress") as Json[]).map((r) => at(r, "ports", 0, "port"));
    expect(egressPorts).toEqual(w.hasEgress ? [4750, 8081] : [8081]);
  });

  it.each(CASES)("runs one confined replica with the Recreate strategy $name", ({ w }) => {
    const d = objectToJSON(buildObjects(w).deployment);
    expect(at(d, "metadata", "name")).toBe("plugin-ibkr-main");
    expect(at(d, "spec", "replicas")).toBe(1);
    expect(at(d, "spec", "strategy")).toEqual({ type: "Recreate" });
    const pod = at(d, "spec", "template", "spec") as Json;
    expect(pod["serviceAccountName"]).toBe("plugin-ibkr-main");
    expect(pod["automountServiceAccountToken"]).toBe(false);
    expect(pod["securityContext"]).toEqual({ runAsNonRoot: true, seccompProfile: { type: "RuntimeDefault" } });
    const containers = pod["containers"] as Json[];
    expect(containers).toHaveLength(1);
    const c = containers[0] as Json;
    expect(c["image"]).toBe(IMAGE.toString());
    expect(String(c["image"])).toMatch(/@sha256:[0-9a-f]{64}$/);
    expect(c["securityContext"]).toMatchObject({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ["ALL"] } });
    for (const m of c["volumeMounts"] as Json[]) expect(m["readOnly"]).toBe(true);
    const sa = objectToJSON(buildObjects(w).serviceAccount);
    expect(sa["automountServiceAccountToken"]).toBe(false);
  });

  it.each(CASES)("mounts the projected tokens, and the egress token and proxy only with egress, $name", ({ w }) => {
    const pod = at(objectToJSON(buildObjects(w).deployment), "spec", "template", "spec") as Json;
    const volumes = pod["volumes"] as Json[];
    const tokens = volumes.filter((v) => v["projected"] !== undefined).map((v) => at(v, "projected", "sources", 0, "serviceAccountToken"));
    const core = { audience: "openfief-core", expirationSeconds: 3600, path: "token" };
    const egress = { audience: "openfief-egress", expirationSeconds: 3600, path: "token" };
    expect(tokens).toEqual(w.hasEgress ? [egress, core] : [core]);
    const c = at(pod, "containers", 0) as Json;
    const mounts = (c["volumeMounts"] as Json[]).map((m) => m["mountPath"]);
    expect(mounts).toContain("/var/run/secrets/openfief");
    expect(mounts.includes("/var/run/secrets/openfief-egress")).toBe(w.hasEgress);
    const env = Object.fromEntries((c["env"] as Json[]).map((e) => [e["name"], e["value"]]));
    expect(env["OPENFIEF_TOKEN_FILE"]).toBe(CORE_TOKEN_PATH);
    if (w.hasEgress) {
      expect(env["OPENFIEF_EGRESS_TOKEN_FILE"]).toBe(EGRESS_TOKEN_PATH);
      expect(env["HTTPS_PROXY"]).toBe("http://[fd00::14]:4750");
      expect(env["NO_PROXY"]).toBe("10.96.0.10");
    } else {
      expect(Object.keys(env).sort()).toEqual([
        "OPENFIEF_CONFIG",
        "OPENFIEF_CORE_ADDRESS",
        "OPENFIEF_CORE_SUBJECT",
        "OPENFIEF_INSTANCE",
        "OPENFIEF_LISTEN_PORT",
        "OPENFIEF_SA_JWKS_DIR",
        "OPENFIEF_TOKEN_FILE",
      ]);
    }
    expect(JSON.stringify(objectsToJSON(buildObjects(w))).includes("openfief-egress\"")).toBe(w.hasEgress);
  });

  it.each(CASES)("mounts the openfief-sa-jwks ConfigMap read-only where OPENFIEF_SA_JWKS_DIR says, and names the core's subject, $name", ({ w }) => {
    const pod = at(objectToJSON(buildObjects(w).deployment), "spec", "template", "spec") as Json;
    const volumes = pod["volumes"] as Json[];
    const jwksVolumes = volumes.filter((v) => at(v, "configMap", "name") === "openfief-sa-jwks");
    expect(jwksVolumes).toEqual([
      {
        name: "openfief-sa-jwks",
        configMap: {
          name: "openfief-sa-jwks",
          items: [
            { key: "issuer", path: "issuer" },
            { key: "jwks.json", path: "jwks.json" },
          ],
        },
      },
    ]);
    const c = at(pod, "containers", 0) as Json;
    const mounts = (c["volumeMounts"] as Json[]).filter((m) => m["name"] === "openfief-sa-jwks");
    // A whole-directory mount, never subPath: only then does the kubelet deliver a rotated key.
    expect(mounts).toEqual([{ name: "openfief-sa-jwks", mountPath: "/var/run/secrets/openfief-sa-jwks", readOnly: true }]);
    const env = Object.fromEntries((c["env"] as Json[]).map((e) => [e["name"], e["value"]]));
    expect(env["OPENFIEF_SA_JWKS_DIR"]).toBe("/var/run/secrets/openfief-sa-jwks");
    expect(env["OPENFIEF_CORE_SUBJECT"]).toBe("system:serviceaccount:openfief:openfief-core");
    expect(env["OPENFIEF_INSTANCE"]).toBe("ibkr-main");
  });

  it("mounts each granted Secret read-only at its manifest path, and the config file that OPENFIEF_CONFIG names", () => {
    const w = CASES[2]?.w as Workload;
    const pod = at(objectToJSON(buildObjects(w).deployment), "spec", "template", "spec") as Json;
    const volumes = pod["volumes"] as Json[];
    const c = at(pod, "containers", 0) as Json;
    const mounts = c["volumeMounts"] as Json[];
    for (const [secretName, mountPath] of [["db", "/srv/db"], ["ibkr-flex-credentials", "/etc/ibkr"]]) {
      const v = volumes.find((x) => at(x, "secret", "secretName") === secretName) as Json;
      expect(mounts).toContainEqual({ name: v["name"], mountPath, readOnly: true });
    }
    const env = Object.fromEntries((c["env"] as Json[]).map((e) => [e["name"], e["value"]]));
    const cmVolume = volumes.find((x) => x["configMap"] !== undefined) as Json;
    const cmMount = mounts.find((m) => m["name"] === cmVolume["name"]) as Json;
    const item = at(cmVolume, "configMap", "items", 0) as Json;
    expect(env["OPENFIEF_CONFIG"]).toBe(`${String(cmMount["mountPath"])}/${String(item["path"])}`);
    const cm = objectToJSON(buildObjects(w).configMap);
    expect(at(cm, "metadata", "name")).toBe(at(cmVolume, "configMap", "name"));
    expect(at(cm, "data", item["key"] as string)).toBe('{"accounts":["U1","U2"],"nested":{"a":null,"b":true},"queryId":"123"}');
  });

  it("exposes the plugin port on a ClusterIP Service that selects only this instance", () => {
    const s = objectToJSON(buildObjects(CASES[0]?.w as Workload).service);
    expect(at(s, "spec")).toEqual({
      type: "ClusterIP",
      selector: { "openfief.io/plugin": "ibkr-main" },
      ports: [{ name: "rpc", port: 9090, protocol: "TCP", targetPort: 9090 }],
    });
  });

  it("restarts the pod when only the config changes", () => {
    const checksum = (w: Workload): unknown => at(objectToJSON(buildObjects(w).deployment), "spec", "template", "metadata", "annotations", "openfief.io/config-checksum");
    expect(checksum(workload({}, { a: 1 }))).not.toEqual(checksum(workload({}, { a: 2 })));
    expect(checksum(workload({}, { a: 1, b: 2 }))).toEqual(checksum(workload({}, { b: 2, a: 1 })));
  });

  it("is byte-stable: the same workload always gives the same JSON, with every list sorted", () => {
    const w = CASES[2]?.w as Workload;
    const a = JSON.stringify(objectsToJSON(buildObjects(w)));
    expect(JSON.stringify(objectsToJSON(buildObjects(w)))).toBe(a);
    const pod = at(objectToJSON(buildObjects(w).deployment), "spec", "template", "spec") as Json;
    const names = (pod["volumes"] as Json[]).map((v) => String(v["name"]));
    expect(names).toEqual([...names].sort());
    const env = (at(pod, "containers", 0, "env") as Json[]).map((e) => String(e["name"]));
    expect(env).toEqual([...env].sort());
  });

  it("keeps the typed objects usable by client-node: a NetworkPolicy's sources are under _from", () => {
    const np = buildObjects(CASES[0]?.w as Workload).networkPolicy;
    expect(np.spec?.ingress?.[0]?._from).toHaveLength(1);
    expect(objectToJSON(np)).not.toHaveProperty(["spec", "ingress", 0, "_from"]);
  });

  it.each(CASES)("survives client-node's serializer from plain JSON once converted back, $name", ({ w }) => {
    for (const json of objectsToJSON(buildObjects(w))) {
      expect(parseYaml(dumpYaml(toClientNodeModel(json)))).toEqual(json);
    }
  });

  it("shows why the conversion is needed: client-node drops a plain `from`, which would admit every source", () => {
    const np = objectToJSON(buildObjects(CASES[0]?.w as Workload).networkPolicy);
    const sent = parseYaml(dumpYaml(np)) as Json;
    expect(at(sent, "spec", "ingress", 0, "from")).toBeUndefined();
    expect(at(np, "spec", "ingress", 0, "from")).toHaveLength(1);
  });
});

describe("buildHostedObjects (a plugin the plugin host runs)", () => {
  it.each(CASES)("is only the plugin's ServiceAccount and its Service, valid against Kubernetes' schemas, $name", ({ w }) => {
    const o = buildHostedObjects(w);
    const json = hostedObjectsToJSON(o);
    expect(json.map((x) => x["kind"])).toEqual(["ServiceAccount", "Service"]);
    expect(() => new ServiceAccount(json[0] as never).validate()).not.toThrow();
    expect(() => new Service(json[1] as never).validate()).not.toThrow();
    for (const x of [o.serviceAccount, o.service]) expect(parseYaml(dumpYaml(x))).toEqual(objectToJSON(x));
  });

  it.each(CASES)("names both plugin-<name> and keeps the ServiceAccount's token unmounted, $name", ({ w }) => {
    const o = buildHostedObjects(w);
    expect(o.serviceAccount.metadata?.name).toBe("plugin-ibkr-main");
    expect(o.serviceAccount.automountServiceAccountToken).toBe(false);
    expect(o.service.metadata?.name).toBe("plugin-ibkr-main");
    expect(o.service.metadata?.labels).toMatchObject({ "openfief.io/plugin": "ibkr-main" });
  });

  it("selects the plugin host's pods on the plugin port, never a pod carrying the plugin label", () => {
    const svc = buildHostedObjects(CASES[0]!.w).service;
    expect(svc.spec).toEqual({ type: "ClusterIP", selector: { "app.kubernetes.io/name": "openfief-plugin-host" }, ports: [{ name: "rpc", port: 9090, protocol: "TCP", targetPort: 9090 }] });
    expect(Object.keys(svc.spec?.selector ?? {})).not.toContain("openfief.io/plugin");
  });

  it("is byte-stable for equal workloads", () => {
    expect(JSON.stringify(hostedObjectsToJSON(buildHostedObjects(workload({}))))).toBe(JSON.stringify(hostedObjectsToJSON(buildHostedObjects(workload({})))));
  });
});
