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
import { Service, ServiceAccount } from "kubernetes-models/v1";
import { parse as parseYaml } from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { clusterReconcilerFactory } from "../../src/compose/index.js";
import { runOperator } from "../../src/kube/operator.js";
import { pluginHostFieldManager } from "../../src/kube/target.js";
import { decodeHostedPlugins, NAMESPACE, PLUGIN_HOST_CONFIGMAP, PLUGIN_HOST_TOKEN_ROLE } from "../../src/plugins/index.js";
import { FakeApiServer } from "./fake-apiserver.js";
import { EXAMPLES, operatorOptions, putTrustedSigners, setOperatorEnv, until } from "./operator-fixture.js";

const NS = NAMESPACE;
const ECB = "localhost/openfief-demo/ecb-fx@sha256:bc5075adc604cc16c13be13e38549e2cb69b2da3e18ce9c023f6c9a312539300";
const ECB_MODULE = "37ca3117ba230ff39ccb7212faaef86a069771114f6048f3d7269f05127d2fe2";
type Obj = Record<string, unknown> & { metadata: Record<string, unknown> };

describe("the operator running a WebAssembly plugin in the plugin host (fake API server)", () => {
  let server: FakeApiServer;
  let dir: string;
  const controller = new AbortController();
  let done: Promise<void>;
  let restoreEnv: () => void = () => undefined;
  const hosted = (): Record<string, string> | undefined => server.get("v1", "ConfigMap", NS, PLUGIN_HOST_CONFIGMAP)?.["data"] as Record<string, string> | undefined;

  beforeAll(async () => {
    restoreEnv = setOperatorEnv();
    server = await FakeApiServer.start();
    dir = await mkdtemp(join(tmpdir(), "openfief-plugin-host-publish-"));
    await putTrustedSigners(server);
    done = runOperator(operatorOptions(server, "replica-a", "operator-token", dir, controller.signal), clusterReconcilerFactory);
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
    restoreEnv();
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
    // The pass prunes the objects and rewrites the tokens Role in turn: wait for both.
    await until("the tokens Role no longer naming ecb-fx", () => !JSON.stringify(server.get("rbac.authorization.k8s.io/v1", "Role", NS, PLUGIN_HOST_TOKEN_ROLE)?.["rules"] ?? []).includes("plugin-ecb-fx"));
    await until("ecb-fx's ServiceAccount pruned", () => server.get("v1", "ServiceAccount", NS, "plugin-ecb-fx") === undefined);
    expect(server.get("v1", "ServiceAccount", NS, "plugin-ecb-fx")).toBeUndefined();
    // No rule at all, rather than a rule without names (which would cover every ServiceAccount).
    expect(server.get("rbac.authorization.k8s.io/v1", "Role", NS, PLUGIN_HOST_TOKEN_ROLE)?.["rules"]).toEqual([]);
  });
});
