/**
 * The operator and a WebAssembly plugin (ADR 0080): the real operator (`runOperator` with
 * `clusterReconcilerFactory`) against the fake API server on 127.0.0.1, on the signed demo's
 * `ecb-fx`. Its objects are only its ServiceAccount and a Service selecting the plugin host's pods;
 * the plugin host is told what to run through the `openfief-plugin-host` ConfigMap, one key per
 * plugin under that plugin's own field manager; uninstalling takes both away.
 */
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Service, ServiceAccount } from "kubernetes-models/v1";
import { pino } from "pino";
import { parse as parseYaml } from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { clusterReconcilerFactory } from "../../src/app/index.js";
import { runOperator } from "../../src/kube/operator.js";
import { pluginHostFieldManager } from "../../src/kube/target.js";
import { TRUSTED_SIGNERS_KEY } from "../../src/kube/trusted-signers.js";
import { decodeHostedPlugins, NAMESPACE, PLUGIN_HOST_CONFIGMAP, PLUGIN_HOST_TOKEN_ROLE, TRUSTED_SIGNERS_CONFIGMAP } from "../../src/plugins/index.js";
import { FakeApiServer } from "./fake-apiserver.js";

const NS = NAMESPACE;
const EXAMPLES = fileURLToPath(new URL("../../examples/", import.meta.url));
const ECB = "localhost/openfief-demo/ecb-fx@sha256:ab40921848cba3ff4d2ebe42e8e929362d256ff94edc90fa2113caa3b6ff45dd";
const ECB_MODULE = "1750a4f19745c2f4db091a42c7340371be133ebc5470ab0ea806263453d10b3c";
const TOPOLOGY = {
  core: { clusterIP: "10.99.0.20", port: 8443, podPort: 8443, podLabels: { "app.kubernetes.io/name": "openfief-core" } },
  proxy: { clusterIP: "10.99.0.30", port: 4750, podPort: 4750, podLabels: { "app.kubernetes.io/name": "openfief-egress-proxy" } },
  pluginPort: 8080,
  coreSubject: "system:serviceaccount:openfief:openfief-core",
};
const ENV_VARS = { OPENFIEF_OCI_LAYOUTS: join(EXAMPLES, "oci"), OPENFIEF_TOPOLOGY: JSON.stringify(TOPOLOGY), OPENFIEF_INSECURE_REGISTRIES: "" };
const DEADLINE_MS = 15_000;

type Obj = Record<string, unknown> & { metadata: Record<string, unknown> };

async function until(what: string, predicate: () => boolean): Promise<void> {
  const deadline = Date.now() + DEADLINE_MS;
  while (Date.now() < deadline) {
    if (predicate()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`never happened within ${DEADLINE_MS} ms: ${what}`);
}

describe("the operator running a WebAssembly plugin in the plugin host (fake API server)", () => {
  let server: FakeApiServer;
  let dir: string;
  const controller = new AbortController();
  let done: Promise<void>;
  const savedEnv: Record<string, string | undefined> = {};
  const hosted = (): Record<string, string> | undefined => server.get("v1", "ConfigMap", NS, PLUGIN_HOST_CONFIGMAP)?.["data"] as Record<string, string> | undefined;

  beforeAll(async () => {
    for (const [k, v] of Object.entries(ENV_VARS)) {
      savedEnv[k] = process.env[k];
      process.env[k] = v;
    }
    server = await FakeApiServer.start();
    dir = await mkdtemp(join(tmpdir(), "openfief-plugin-host-publish-"));
    server.put({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: TRUSTED_SIGNERS_CONFIGMAP, namespace: NS },
      data: { [TRUSTED_SIGNERS_KEY]: await readFile(join(EXAMPLES, "trusted-signers.json"), "utf8") },
    });
    done = runOperator(
      {
        kubeConfigObject: server.kubeConfig("operator-token"),
        dataDir: dir,
        healthPort: 0,
        healthHost: "127.0.0.1",
        identity: "replica-a",
        log: pino({ level: "silent" }),
        signal: controller.signal,
        sourceOptions: { relistIntervalMs: 1_000, initialBackoffMs: 50, maxBackoffMs: 500 },
        retryPeriodSeconds: 0.1,
        reconcileDelayMs: 10,
      },
      clusterReconcilerFactory,
    );
    for (const file of ["plugins/ecb-fx.yaml", "plugins/ecb-fx-grant.yaml"]) server.put(parseYaml(await readFile(join(EXAMPLES, file), "utf8")) as Obj);
    // One pass writes the ConfigMap key, the tokens Role and the objects in turn: wait for all three.
    await until("ecb-fx published to the plugin host", () => hosted()?.["ecb-fx"] !== undefined);
    await until("the tokens Role naming ecb-fx", () => JSON.stringify(server.get("rbac.authorization.k8s.io/v1", "Role", NS, PLUGIN_HOST_TOKEN_ROLE)?.["rules"] ?? []).includes("plugin-ecb-fx"));
    await until("ecb-fx's Service applied", () => server.get("v1", "Service", NS, "plugin-ecb-fx") !== undefined && server.get("v1", "ServiceAccount", NS, "plugin-ecb-fx") !== undefined);
  }, 30_000);

  afterAll(async () => {
    controller.abort();
    await done;
    await server.close();
    await rm(dir, { recursive: true, force: true });
    for (const [k, v] of Object.entries(savedEnv)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });

  it("publishes the plugin's image, module and origins under the plugin's own field manager", () => {
    const decoded = decodeHostedPlugins(hosted());
    expect(decoded.errors).toEqual([]);
    expect(decoded.plugins.get("ecb-fx")).toEqual({ image: ECB, module: ECB_MODULE, origins: ["https://www.ecb.europa.eu"] });
    expect(server.managers("v1", "ConfigMap", NS, PLUGIN_HOST_CONFIGMAP)).toMatchObject({ [pluginHostFieldManager("ecb-fx")]: ["data.ecb-fx"] });
  });

  it("lets the plugin host mint tokens for exactly the plugin's ServiceAccount, through the Role the operator keeps", () => {
    const role = server.get("rbac.authorization.k8s.io/v1", "Role", NS, PLUGIN_HOST_TOKEN_ROLE);
    expect(role?.["rules"]).toEqual([{ apiGroups: [""], resources: ["serviceaccounts/token"], verbs: ["create"], resourceNames: ["plugin-ecb-fx"] }]);
  });

  it("applies only the plugin's ServiceAccount and a Service selecting the plugin host's pods, valid Kubernetes objects", () => {
    const sa = server.get("v1", "ServiceAccount", NS, "plugin-ecb-fx");
    const svc = server.get("v1", "Service", NS, "plugin-ecb-fx");
    expect(() => new ServiceAccount(sa as never).validate()).not.toThrow();
    expect(() => new Service(svc as never).validate()).not.toThrow();
    expect(sa?.["automountServiceAccountToken"]).toBe(false);
    expect(svc?.["spec"]).toMatchObject({ type: "ClusterIP", selector: { "app.kubernetes.io/name": "openfief-plugin-host" }, ports: [{ name: "rpc", port: 8080, targetPort: 8080, protocol: "TCP" }] });
  });

  it.each([
    ["Deployment", "apps/v1", "plugin-ecb-fx"],
    ["NetworkPolicy", "networking.k8s.io/v1", "plugin-ecb-fx"],
    ["ConfigMap", "v1", "plugin-ecb-fx-config"],
  ])("creates no %s for it: the plugin host's own confine it", (kind, apiVersion, name) => {
    expect(server.get(apiVersion, kind, NS, name)).toBeUndefined();
  });

  it("takes the plugin's key and objects away when the plugin is uninstalled", async () => {
    server.remove("openfief.io/v1alpha1", "Plugin", NS, "ecb-fx");
    await until("ecb-fx's key removed", () => hosted() !== undefined && hosted()?.["ecb-fx"] === undefined);
    await until("ecb-fx's Service pruned", () => server.get("v1", "Service", NS, "plugin-ecb-fx") === undefined);
    expect(server.get("v1", "ServiceAccount", NS, "plugin-ecb-fx")).toBeUndefined();
    // No rule at all, rather than a rule without names (which would cover every ServiceAccount).
    expect(server.get("rbac.authorization.k8s.io/v1", "Role", NS, PLUGIN_HOST_TOKEN_ROLE)?.["rules"]).toEqual([]);
  });
});
