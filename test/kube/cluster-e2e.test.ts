/**
 * The cluster end to end: the real operator (`runOperator` with `clusterReconcilerFactory`, the
 * real client-node 1.4) against the fake API server on 127.0.0.1, on the signed demo in
 * `examples/` (its OCI layout through OPENFIEF_OCI_LAYOUTS, its owner key in the
 * `openfief-trusted-signers` ConfigMap). One story, step by step: install, upgrade held back,
 * approval, uninstall; and a second replica that never applies while the first leads.
 *
 * The steps share one operator and one fake cluster, so they run in order. Every wait polls a
 * condition with a deadline; nothing sleeps for a fixed time.
 */
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Ajv } from "ajv";
import { Deployment } from "kubernetes-models/apps/v1";
import { NetworkPolicy } from "kubernetes-models/networking.k8s.io/v1";
import { ConfigMap, Service, ServiceAccount } from "kubernetes-models/v1";
import { parseAllDocuments, parse as parseYaml } from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { KubeApplied, PreviousObserved, RolloutDecided } from "../../src/events/catalog.js";
import type { EventLog } from "../../src/events/store.js";
import type { StoredEvent } from "../../src/events/types.js";
import { runOperator } from "../../src/kube/operator.js";
import { allowListFieldManager, OPERATOR_FIELD_MANAGER } from "../../src/kube/target.js";
import { ALLOWLIST_CONFIGMAP, NAMESPACE, TRUSTED_SIGNERS_CONFIGMAP } from "../../src/plugins/constants.js";
import { checkDecisions } from "../../src/projections/check-decisions.js";
import { clusterReconcilerFactory, topologyFromEnv } from "../../src/compose/index.js";
import { openDataStore } from "../../src/app/index.js";
import { FakeApiServer } from "./fake-apiserver.js";
import { EXAMPLES, operatorOptions, putTrustedSigners, setOperatorEnv, until as waitUntil } from "./operator-fixture.js";
import type { LoggedRequest } from "./fake-apiserver.js";
import { toJsonSchema } from "../support/crd-schema.js";

const NS = NAMESPACE;
const PLUGIN = { apiVersion: "openfief.io/v1alpha1", kind: "Plugin" } as const;
const NBP_V1 = "localhost/openfief-demo/nbp-fx@sha256:32a155bf13262adffa93e0d7023b17306472f1dcb8d93c686bfe850e9dc594cb";
const NBP_V2 = "localhost/openfief-demo/nbp-fx@sha256:ac327d8f7783deccfac561eb6d7231f9a77c219bb934886e9e9e04dd2193321d";
/** ledger-view's image: its digest moves with its UI bundle, so it is read from the demo. */
const LEDGER = (parseYaml(readFileSync(join(EXAMPLES, "plugins/ledger-view.yaml"), "utf8")) as { spec: { image: string } }).spec.image;
const WORKLOAD = [
  { apiVersion: "v1", kind: "ServiceAccount", base: "/api/v1", plural: "serviceaccounts" },
  { apiVersion: "v1", kind: "ConfigMap", base: "/api/v1", plural: "configmaps" },
  { apiVersion: "networking.k8s.io/v1", kind: "NetworkPolicy", base: "/apis/networking.k8s.io/v1", plural: "networkpolicies" },
  { apiVersion: "v1", kind: "Service", base: "/api/v1", plural: "services" },
  { apiVersion: "apps/v1", kind: "Deployment", base: "/apis/apps/v1", plural: "deployments" },
] as const;
const TOKEN_A = "replica-a-token";
const TOKEN_B = "replica-b-token";

type Obj = Record<string, unknown> & { metadata: Record<string, unknown> };
interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
  observedGeneration: number;
}
interface Status {
  observedGeneration?: number;
  deployed?: { image: string; manifest?: Record<string, unknown>; config?: unknown };
  pendingApproval?: { capabilities: string[]; egress: Array<{ host: string; port: number }>; secrets: string[]; dataTiers: string[] };
  conditions?: Condition[];
}

type Validatable = { validate(): void };
/** Kubernetes' OpenAPI schemas of the kinds the operator writes (kubernetes-models). */
const MODELS: Record<string, new (obj: never) => Validatable> = {
  "v1/ServiceAccount": ServiceAccount,
  "v1/ConfigMap": ConfigMap,
  "v1/Service": Service,
  "networking.k8s.io/v1/NetworkPolicy": NetworkPolicy,
  "apps/v1/Deployment": Deployment,
};

const PLUGIN_CRD = parseYaml(readFileSync(fileURLToPath(new URL("../../deploy/crds/plugins.openfief.io.yaml", import.meta.url)), "utf8")) as {
  spec: { versions: Array<{ schema: { openAPIV3Schema: Record<string, unknown> } }> };
};
const validatePluginCr = new Ajv({ allErrors: true, strict: false }).compile(toJsonSchema(PLUGIN_CRD.spec.versions[0]?.schema.openAPIV3Schema) as Record<string, unknown>);

/** A replica's options: fast relists and elections, so the story runs in seconds. */
/** Set when an operator replica stops with an error, so a wait fails with that error at once. */
let operatorFailure: unknown;

/** Polls until `predicate` holds, failing at once when a replica stopped with an error. */
function until(what: string, predicate: () => boolean | Promise<boolean>): Promise<void> {
  return waitUntil(what, predicate, () => operatorFailure);
}

async function example(path: string): Promise<Obj> {
  return parseYaml(await readFile(join(EXAMPLES, path), "utf8")) as Obj;
}

function condition(status: Status | undefined, type: string): Condition | undefined {
  return status?.conditions?.find((c) => c.type === type);
}

function writes(requests: readonly LoggedRequest[]): LoggedRequest[] {
  return requests.filter((r) => r.method !== "GET");
}

describe("the operator in a cluster, end to end on the signed demo (fake API server, real client-node)", () => {
  let server: FakeApiServer;
  let dir: string;
  let restoreEnv: () => void = () => undefined;
  const replicas: Array<{ controller: AbortController; done: Promise<void> }> = [];

  const status = (name: string): Status | undefined => server.get(PLUGIN.apiVersion, PLUGIN.kind, NS, name)?.["status"] as Status | undefined;
  const allowList = (): Record<string, string> | undefined => server.get("v1", "ConfigMap", NS, ALLOWLIST_CONFIGMAP)?.["data"] as Record<string, string> | undefined;
  const deploymentImage = (name: string): unknown =>
    ((server.get("apps/v1", "Deployment", NS, `plugin-${name}`)?.["spec"] as { template?: { spec?: { containers?: Array<{ image?: string }> } } } | undefined)?.template?.spec?.containers ?? [])[0]?.image;
  const byClient = (token: string): LoggedRequest[] => server.requests.filter((r) => r.client === token);

  function startReplica(identity: string, token: string): { controller: AbortController; done: Promise<void> } {
    const controller = new AbortController();
    const options = operatorOptions(server, identity, token, join(dir, identity), controller.signal);
    const done = runOperator(options, clusterReconcilerFactory).catch((err: unknown) => {
      operatorFailure = err;
    });
    const replica = { controller, done };
    replicas.push(replica);
    return replica;
  }

  beforeAll(async () => {
    restoreEnv = setOperatorEnv();
    server = await FakeApiServer.start();
    dir = await mkdtemp(join(tmpdir(), "openfief-cluster-e2e-"));
    await putTrustedSigners(server);
    startReplica("replica-a", TOKEN_A);
    await until("replica-a holds the Lease", () => (server.get("coordination.k8s.io/v1", "Lease", NS, "openfief-operator")?.["spec"] as { holderIdentity?: string } | undefined)?.holderIdentity === "replica-a");
    startReplica("replica-b", TOKEN_B);
    await until("replica-b reads the Lease", () => byClient(TOKEN_B).some((r) => r.path.includes("/leases/")));
  });

  afterAll(async () => {
    for (const r of replicas) r.controller.abort();
    await Promise.allSettled(replicas.map((r) => r.done));
    await server.close();
    await rm(dir, { recursive: true, force: true });
    restoreEnv();
  });

  it("applies each plugin's objects with forced server-side apply as openfief-operator, the NetworkPolicy keeping `from`", { timeout: 30_000 }, async () => {
    for (const file of ["plugins/nbp-fx.yaml", "plugins/nbp-fx-grant.yaml", "plugins/ledger-view.yaml", "plugins/ledger-view-grant.yaml"]) server.put(await example(file));
    await until("both Deployments applied", () => deploymentImage("nbp-fx") === NBP_V1 && deploymentImage("ledger-view") === LEDGER);

    for (const plugin of ["nbp-fx", "ledger-view"]) {
      const plugUid = server.get(PLUGIN.apiVersion, PLUGIN.kind, NS, plugin)?.metadata["uid"];
      for (const w of WORKLOAD) {
        const name = w.kind === "ConfigMap" ? `plugin-${plugin}-config` : `plugin-${plugin}`;
        const path = `${w.base}/namespaces/${NS}/${w.plural}/${name}`;
        const patches = server.requests.filter((r) => r.method === "PATCH" && r.path === path);
        expect(patches.length, `${w.kind} ${name} applied`).toBeGreaterThan(0);
        for (const p of patches) {
          expect(p.contentType).toBe("application/apply-patch+yaml");
          expect(p.query).toMatchObject({ fieldManager: OPERATOR_FIELD_MANAGER, force: "true" });
        }
        // Owner references are what garbage-collects the objects with their Plugin.
        expect(server.get(w.apiVersion, w.kind, NS, name)?.metadata["ownerReferences"]).toEqual([
          { apiVersion: "openfief.io/v1alpha1", kind: "Plugin", name: plugin, uid: plugUid, controller: true, blockOwnerDeletion: true },
        ]);
      }
    }
    // Nothing the operator sent was a non-apply patch (client-node's default is strategic merge).
    const patches = server.requests.filter((r) => r.method === "PATCH" && r.client === TOKEN_A);
    expect(patches.map((p) => p.contentType).filter((t) => t !== "application/apply-patch+yaml")).toEqual([]);

    const npPatches = server.requests.filter((r) => r.method === "PATCH" && r.path.endsWith("/networkpolicies/plugin-nbp-fx"));
    for (const p of npPatches) {
      const ingress = (p.body as { spec?: { ingress?: Array<Record<string, unknown>> } }).spec?.ingress ?? [];
      expect(ingress.length).toBeGreaterThan(0);
      for (const rule of ingress) {
        expect(rule["from"]).toEqual(expect.arrayContaining([expect.anything()]));
        expect(rule).not.toHaveProperty("_from");
      }
      expect(JSON.stringify(p.body)).not.toContain("_from");
    }
  });

  it("reads OPENFIEF_TOPOLOGY: the plugin's proxy and core addresses are the configured ones", async () => {
    const containers = (server.get("apps/v1", "Deployment", NS, "plugin-nbp-fx")?.["spec"] as { template: { spec: { containers: Array<{ env?: Array<{ name: string; value?: string }> }> } } }).template.spec.containers;
    const env = Object.fromEntries((containers[0]?.env ?? []).map((e) => [e.name, e.value]));
    expect(env["HTTPS_PROXY"]).toBe("http://10.99.0.30:4750");
    expect(env["OPENFIEF_CORE_ADDRESS"]).toBe("10.99.0.20:8443");
  });

  it("publishes the allow-list with one field manager per plugin key", async () => {
    await until("the allow-list holds both plugins", () => allowList()?.["nbp-fx"] !== undefined && allowList()?.["ledger-view"] !== undefined);
    // A running plugin without egress has an empty list: the proxy knows it and allows it nothing.
    expect(allowList()).toEqual({ "nbp-fx": "api.nbp.pl:443\n", "ledger-view": "" });
    const managers = server.managers("v1", "ConfigMap", NS, ALLOWLIST_CONFIGMAP);
    expect(managers[allowListFieldManager("nbp-fx")]).toEqual(["data.nbp-fx"]);
    expect(managers[allowListFieldManager("ledger-view")]).toEqual(["data.ledger-view"]);
    expect(managers[OPERATOR_FIELD_MANAGER]).not.toContain("data.nbp-fx");
    const keyPatches = server.requests.filter((r) => r.method === "PATCH" && r.path === `/api/v1/namespaces/${NS}/configmaps/${ALLOWLIST_CONFIGMAP}` && r.query["fieldManager"] === allowListFieldManager("nbp-fx"));
    expect(keyPatches.length).toBeGreaterThan(0);
    for (const p of keyPatches) {
      expect(p.contentType).toBe("application/apply-patch+yaml");
      expect(p.query["force"]).toBe("true");
      // A plugin's manager sends its own key and nothing else.
      expect(Object.keys((p.body as { data?: Record<string, string> }).data ?? {})).toEqual(["nbp-fx"]);
    }
  });

  it("writes each Plugin's status: the deployed image, verified by the catalog, nothing to approve", async () => {
    await until("nbp-fx status written", () => status("nbp-fx")?.deployed?.image === NBP_V1 && condition(status("nbp-fx"), "SignatureVerified") !== undefined);
    await until("ledger-view status written", () => status("ledger-view")?.deployed?.image === LEDGER);
    for (const [plugin, image] of [["nbp-fx", NBP_V1], ["ledger-view", LEDGER]] as const) {
      const s = status(plugin);
      expect(s?.deployed?.image).toBe(image);
      // The whole running version, so an operator without this store can keep running it.
      expect(s?.deployed?.manifest).toMatchObject({ capabilities: expect.arrayContaining([expect.any(String)]) });
      expect(s?.observedGeneration).toBe(1);
      expect(s?.pendingApproval).toBeUndefined();
      expect(condition(s, "SignatureVerified")).toMatchObject({ status: "True", reason: "Verified", observedGeneration: 1 });
      expect(condition(s, "ApprovalRequired")).toMatchObject({ status: "False", observedGeneration: 1 });
    }
    const statusPatches = server.requests.filter((r) => r.method === "PATCH" && r.path.endsWith("/plugins/nbp-fx/status"));
    expect(statusPatches.length).toBeGreaterThan(0);
    for (const p of statusPatches) {
      expect(p.contentType).toBe("application/apply-patch+yaml");
      expect(p.query).toMatchObject({ fieldManager: OPERATOR_FIELD_MANAGER, force: "true" });
    }
  });

  it("goes quiet once converged: later relists and reconciles write nothing but the Lease", { timeout: 30_000 }, async () => {
    const relists = (): number => byClient(TOKEN_A).filter((r) => r.method === "GET" && r.path === `/apis/openfief.io/v1alpha1/namespaces/${NS}/plugins` && r.query["watch"] !== "true").length;
    // Let the last reconcile's own status writes come back through the watch first.
    const settled = relists();
    await until("one relist after convergence", () => relists() >= settled + 1);
    const from = server.requests.length;
    const seen = relists();
    await until("three more relists", () => relists() >= seen + 3);
    expect(writes(server.requests.slice(from)).filter((r) => !r.path.includes("/leases/"))).toEqual([]);
  });

  it("holds an upgrade that asks for a new host back: exactly static.nbp.pl:443 pending, v1 still deployed and running", { timeout: 30_000 }, async () => {
    const upgradedAt = server.requests.length;
    const v2 = server.put(await example("upgrade/nbp-fx-v2.yaml"));
    expect(v2.metadata["generation"]).toBe(2);
    await until("the hold-back in status", () => status("nbp-fx")?.observedGeneration === 2 && condition(status("nbp-fx"), "ApprovalRequired")?.status === "True");
    const s = status("nbp-fx");
    expect(s?.pendingApproval).toEqual({ capabilities: [], egress: [{ host: "static.nbp.pl", port: 443 }], secrets: [], dataTiers: [] });
    expect(condition(s, "ApprovalRequired")).toMatchObject({ status: "True", reason: "PendingApproval", observedGeneration: 2 });
    expect(condition(s, "ApprovalRequired")?.message).toContain("static.nbp.pl:443");
    expect(s?.deployed?.image).toBe(NBP_V1);
    expect(s?.deployed?.config).toEqual({ startDate: "2026-11-02" });
    expect(deploymentImage("nbp-fx")).toBe(NBP_V1);
    expect(allowList()?.["nbp-fx"]).toBe("api.nbp.pl:443\n");
    // No status write ever claimed generation 2 while still showing what was decided for generation 1.
    const claims = server.requests
      .slice(upgradedAt)
      .filter((r) => r.method === "PATCH" && r.path.endsWith("/plugins/nbp-fx/status"))
      .map((r) => (r.body as { status: Status }).status)
      .filter((st) => st.observedGeneration === 2);
    expect(claims.length).toBeGreaterThan(0);
    for (const claim of claims) {
      expect(condition(claim, "ApprovalRequired")?.status).toBe("True");
      expect(condition(claim, "SignatureVerified")?.status).toBe("True");
    }
    // v2's image was never sent to the cluster.
    expect(server.requests.some((r) => r.method === "PATCH" && JSON.stringify(r.body).includes(NBP_V2.split("@")[1] ?? "-"))).toBe(false);
  });

  it("writes only objects valid against Kubernetes' OpenAPI schemas, and a status (with pendingApproval) valid against the Plugin CRD", async () => {
    let checked = 0;
    for (const [key, Model] of Object.entries(MODELS)) {
      const [apiVersion, kind] = [key.slice(0, key.lastIndexOf("/")), key.slice(key.lastIndexOf("/") + 1)];
      for (const obj of server.list(apiVersion, kind, NS)) {
        if (obj.metadata["name"] === TRUSTED_SIGNERS_CONFIGMAP) continue;
        expect(() => new Model(obj as never).validate(), `${kind} ${String(obj.metadata["name"])}`).not.toThrow();
        checked += 1;
      }
    }
    // Each plugin's objects, the allow-list ConfigMap and the (empty) plugin-host ConfigMap.
    expect(checked).toBe(2 * WORKLOAD.length + 2);
    for (const name of ["nbp-fx", "ledger-view"]) {
      const plugin = server.get(PLUGIN.apiVersion, PLUGIN.kind, NS, name) as Obj;
      const ok = validatePluginCr({ ...plugin, metadata: { name, namespace: NS } });
      expect(validatePluginCr.errors ?? [], name).toEqual([]);
      expect(ok).toBe(true);
    }
    expect(status("nbp-fx")?.pendingApproval).toBeDefined();
  });

  it("runs v2 once the owner adds static.nbp.pl to the grant: nothing pending, both hosts allowed", { timeout: 30_000 }, async () => {
    const grant = await example("plugins/nbp-fx-grant.yaml");
    const spec = grant["spec"] as { egress: Array<{ host: string }> };
    server.put({ ...grant, spec: { ...spec, egress: [...spec.egress, { host: "static.nbp.pl" }] } });
    await until("v2 deployed", () => status("nbp-fx")?.deployed?.image === NBP_V2 && deploymentImage("nbp-fx") === NBP_V2);
    await until("the allow-list holds both hosts", () => allowList()?.["nbp-fx"] === "api.nbp.pl:443\nstatic.nbp.pl:443\n");
    await until("nothing pending", () => condition(status("nbp-fx"), "ApprovalRequired")?.status === "False");
    expect(status("nbp-fx")?.pendingApproval).toBeUndefined();
    expect(condition(status("nbp-fx"), "SignatureVerified")).toMatchObject({ status: "True", reason: "Signed" });
    expect(server.managers("v1", "ConfigMap", NS, ALLOWLIST_CONFIGMAP)[allowListFieldManager("nbp-fx")]).toEqual(["data.nbp-fx"]);
  });

  it("uninstalls a deleted Plugin: its objects are garbage-collected and its allow-list key removed, the other plugin untouched", { timeout: 30_000 }, async () => {
    const { "nbp-fx": removed, ...others } = allowList() ?? {};
    expect(removed).toBe("api.nbp.pl:443\nstatic.nbp.pl:443\n");
    const keyRemovalsBefore = server.requests.filter((r) => r.query["fieldManager"] === allowListFieldManager("nbp-fx") && (r.body as { data?: unknown }).data === undefined).length;
    expect(server.remove(PLUGIN.apiVersion, PLUGIN.kind, NS, "nbp-fx")).toBe(true);
    await until("the allow-list key removed", () => allowList() !== undefined && !Object.hasOwn(allowList() ?? {}, "nbp-fx"));
    // The key went by an apply of its own manager that no longer sends it.
    const removals = server.requests.filter((r) => r.method === "PATCH" && r.query["fieldManager"] === allowListFieldManager("nbp-fx") && (r.body as { data?: unknown }).data === undefined);
    expect(removals.length).toBeGreaterThan(keyRemovalsBefore);
    expect(server.managers("v1", "ConfigMap", NS, ALLOWLIST_CONFIGMAP)[allowListFieldManager("nbp-fx")]).toBeUndefined();
    for (const w of WORKLOAD) {
      const names = server.list(w.apiVersion, w.kind, NS).map((o) => String(o.metadata["name"]));
      expect(names.filter((n) => n.startsWith("plugin-nbp-fx"))).toEqual([]);
      expect(names.some((n) => n.startsWith("plugin-ledger-view"))).toBe(true);
    }
    expect(deploymentImage("ledger-view")).toBe(LEDGER);
    expect(others).toEqual({ "ledger-view": "" });
    expect(allowList()).toEqual(others);
  });

  it("never lets the standby replica write while the leader holds the Lease, and hands over when the leader stops", { timeout: 30_000 }, async () => {
    // The standby ran through the whole story, contending for the Lease round after round, and wrote nothing.
    await until("replica-b has tried for the Lease 20 times", () => byClient(TOKEN_B).filter((r) => r.method === "GET" && r.path.endsWith("/leases/openfief-operator")).length >= 20);
    expect(byClient(TOKEN_B).filter((r) => r.path.startsWith(`/apis/openfief.io/v1alpha1/namespaces/${NS}/plugins`)).length).toBeGreaterThan(0);
    expect(writes(byClient(TOKEN_B))).toEqual([]);
    expect(writes(byClient(TOKEN_A)).length).toBeGreaterThan(0);

    const [a] = replicas;
    a?.controller.abort();
    await a?.done;
    expect(operatorFailure).toBeUndefined();
    const released = server.requests.length;
    await until("replica-b leads", () => (server.get("coordination.k8s.io/v1", "Lease", NS, "openfief-operator")?.["spec"] as { holderIdentity?: string }).holderIdentity === "replica-b");
    await until("replica-b applies ledger-view", () => byClient(TOKEN_B).some((r) => r.method === "PATCH" && r.path.endsWith("/deployments/plugin-ledger-view")));
    const firstWrite = server.requests.findIndex((r) => r.client === TOKEN_B && r.method !== "GET");
    expect(firstWrite).toBeGreaterThanOrEqual(released);
    expect(writes(server.requests.slice(released)).filter((r) => r.client === TOKEN_A)).toEqual([]);
  });
});

describe("an operator that starts on an empty store while an upgrade is held back (seed 000: Previous from status.deployed)", () => {
  let server: FakeApiServer;
  let dir: string;
  let restoreEnv: () => void = () => undefined;
  const running: Array<{ controller: AbortController; done: Promise<void> }> = [];
  const TOKEN_FIRST = "first-operator-token";
  const TOKEN_SUCCESSOR = "successor-token";

  const status = (): Status | undefined => server.get(PLUGIN.apiVersion, PLUGIN.kind, NS, "nbp-fx")?.["status"] as Status | undefined;
  const allowList = (): Record<string, string> | undefined => server.get("v1", "ConfigMap", NS, ALLOWLIST_CONFIGMAP)?.["data"] as Record<string, string> | undefined;
  const deployment = (): Obj | undefined => server.get("apps/v1", "Deployment", NS, "plugin-nbp-fx");
  const deploymentImage = (): unknown =>
    ((deployment()?.["spec"] as { template?: { spec?: { containers?: Array<{ image?: string }> } } } | undefined)?.template?.spec?.containers ?? [])[0]?.image;
  const holder = (): string | undefined => (server.get("coordination.k8s.io/v1", "Lease", NS, "openfief-operator")?.["spec"] as { holderIdentity?: string } | undefined)?.holderIdentity;

  function start(identity: string, token: string): { controller: AbortController; done: Promise<void> } {
    const controller = new AbortController();
    const done = runOperator(operatorOptions(server, identity, token, join(dir, identity), controller.signal), clusterReconcilerFactory).catch((err: unknown) => {
      operatorFailure = err;
    });
    const r = { controller, done };
    running.push(r);
    return r;
  }

  async function readStore<T>(identity: string, read: (store: EventLog) => Promise<T>): Promise<T> {
    const store = await openDataStore(join(dir, identity));
    try {
      return await read(store);
    } finally {
      await store.close();
    }
  }

  beforeAll(async () => {
    operatorFailure = undefined;
    restoreEnv = setOperatorEnv();
    server = await FakeApiServer.start();
    dir = await mkdtemp(join(tmpdir(), "openfief-cluster-successor-"));
    await putTrustedSigners(server);
  });

  afterAll(async () => {
    for (const r of running) r.controller.abort();
    await Promise.allSettled(running.map((r) => r.done));
    await server.close();
    await rm(dir, { recursive: true, force: true });
    restoreEnv();
  });

  it("keeps v1 running: its Deployment and allow-list key untouched, status.deployed still v1, static.nbp.pl:443 still pending", { timeout: 60_000 }, async () => {
    // The first operator installs v1, then holds v2 back.
    const first = start("first", TOKEN_FIRST);
    await until("the first operator holds the Lease", () => holder() === "first");
    for (const file of ["plugins/nbp-fx.yaml", "plugins/nbp-fx-grant.yaml"]) server.put(await example(file));
    await until("v1 deployed", () => deploymentImage() === NBP_V1 && status()?.deployed?.image === NBP_V1);
    server.put(await example("upgrade/nbp-fx-v2.yaml"));
    await until("v2 held back", () => status()?.observedGeneration === 2 && condition(status(), "ApprovalRequired")?.status === "True");
    const heldStatus = structuredClone(status());
    expect(heldStatus?.deployed?.image).toBe(NBP_V1);
    expect(heldStatus?.deployed?.manifest).toMatchObject({ capabilities: ["connector"], egress: [{ host: "api.nbp.pl", port: 443 }] });
    const deploymentUid = deployment()?.metadata["uid"];
    expect(deploymentUid).toEqual(expect.any(String));
    first.controller.abort();
    await first.done;
    expect(operatorFailure).toBeUndefined();

    // A successor with an EMPTY data folder (a new volume) takes over.
    await expect(readFile(join(dir, "successor", "openfief.db"))).rejects.toThrow();
    const from = server.requests.length;
    const successor = start("successor", TOKEN_SUCCESSOR);
    await until("the successor holds the Lease", () => holder() === "successor");
    const published = (): boolean => server.requests.slice(from).some((r) =>
      r.client === TOKEN_SUCCESSOR && r.method === "PATCH" && r.path === `/api/v1/namespaces/${NS}/configmaps/${ALLOWLIST_CONFIGMAP}` && r.query["fieldManager"] === allowListFieldManager("nbp-fx"));
    await until("the successor reconciled nbp-fx and published its allow-list key", published);
    // Stopping waits for the reconcile in flight (and its status pass) to finish.
    successor.controller.abort();
    await successor.done;
    expect(operatorFailure).toBeUndefined();

    const mine = server.requests.slice(from).filter((r) => r.client === TOKEN_SUCCESSOR);
    expect(mine.filter((r) => r.method === "DELETE")).toEqual([]);
    expect(deployment()?.metadata["uid"]).toBe(deploymentUid);
    expect(deploymentImage()).toBe(NBP_V1);
    expect(allowList()?.["nbp-fx"]).toBe("api.nbp.pl:443\n");
    const keyRemovals = mine.filter((r) => r.method === "PATCH" && r.query["fieldManager"] === allowListFieldManager("nbp-fx") && (r.body as { data?: unknown }).data === undefined);
    expect(keyRemovals).toEqual([]);
    expect(mine.some((r) => r.method === "PATCH" && JSON.stringify(r.body).includes(NBP_V2.split("@")[1] ?? "-"))).toBe(false);
    const s = status();
    expect(s?.deployed).toEqual(heldStatus?.deployed);
    expect(s?.pendingApproval).toEqual({ capabilities: [], egress: [{ host: "static.nbp.pl", port: 443 }], secrets: [], dataTiers: [] });
    expect(condition(s, "ApprovalRequired")).toMatchObject({ status: "True", reason: "PendingApproval", observedGeneration: 2 });

    // The successor's log: the cluster's word recorded as a fact, v1's signature checked again,
    // a decision that keeps v1 and replays, and every object it applied.
    await readStore("successor", async (store) => {
      const stream = "plugin/nbp-fx";
      const observed = await store.read({ stream, type: "previous.observed" });
      expect(observed.map((e) => [e.actor, (e.data as PreviousObserved).deployed])).toEqual([["cluster", heldStatus?.deployed]]);
      const decisions = (await store.read({ stream, type: "rollout.decided" })) as StoredEvent<RolloutDecided>[];
      expect(decisions.length).toBe(1);
      expect(decisions[0]?.data.inputs.previous?.image).toBe(NBP_V1);
      expect(decisions[0]?.data.plan).toMatchObject({ outcome: "previous", run: { image: NBP_V1 } });
      const v1Digest = NBP_V1.split("@")[1];
      const verdicts = (await store.read({ type: "signature.verdict" })).map((e) => e.data as { digest: string; outcome: string });
      expect(verdicts).toEqual(expect.arrayContaining([expect.objectContaining({ digest: v1Digest, outcome: "verified" })]));
      expect(await checkDecisions(store)).toMatchObject({ checked: 1, divergences: [], upgrades: [] });
      const desired = await store.last(stream, "workload.desired");
      const applied = (await store.read({ stream, type: "kube.applied" })) as StoredEvent<KubeApplied>[];
      expect(applied.length).toBeGreaterThan(0);
      expect(applied.every((e) => e.causedBy === desired?.seq)).toBe(true);
      const records = applied.flatMap((e) => e.data.records);
      expect(records).toEqual(expect.arrayContaining([
        { action: "apply", apiVersion: "apps/v1", kind: "Deployment", name: "plugin-nbp-fx", fieldManager: OPERATOR_FIELD_MANAGER, ok: true },
        { action: "apply", apiVersion: "v1", kind: "ConfigMap", name: ALLOWLIST_CONFIGMAP, fieldManager: allowListFieldManager("nbp-fx"), key: "nbp-fx", ok: true },
      ]));
      expect(records.filter((r) => r.action === "prune")).toEqual([]);
    });
    // The first operator had decisions of its own from the start: it never took the cluster's word.
    await readStore("first", async (store) => {
      expect(await store.read({ stream: "plugin/nbp-fx", type: "previous.observed" })).toEqual([]);
      expect((await checkDecisions(store)).divergences).toEqual([]);
    });
  });
});

describe("the deploy base's OPENFIEF_TOPOLOGY", () => {
  const docs = (file: string): Obj[] =>
    parseAllDocuments(readFileSync(fileURLToPath(new URL(`../../deploy/base/${file}`, import.meta.url)), "utf8")).map((d) => d.toJS() as Obj);

  it("is a valid topology whose proxy address and port are the egress proxy Service's pinned clusterIP and port", () => {
    const deployment = docs("operator.yaml").find((o) => o["kind"] === "Deployment") as Obj;
    const env = (deployment["spec"] as { template: { spec: { containers: Array<{ env: Array<{ name: string; value?: string }> }> } } }).template.spec.containers[0]?.env ?? [];
    const raw = env.find((e) => e.name === "OPENFIEF_TOPOLOGY")?.value;
    expect(raw, "the operator Deployment sets OPENFIEF_TOPOLOGY").toBeDefined();
    const topology = topologyFromEnv({ OPENFIEF_TOPOLOGY: raw });
    const service = docs("egress-proxy.yaml").find((o) => o["kind"] === "Service") as Obj;
    const spec = service["spec"] as { clusterIP: string; ports: Array<{ port: number }> };
    expect(topology.proxy.clusterIP).toBe(spec.clusterIP);
    expect(spec.ports.map((p) => p.port)).toContain(topology.proxy.port);
  });
});
