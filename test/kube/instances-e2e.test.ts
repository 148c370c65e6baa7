/**
 * One Secret per instance and uninstall with --purge in a cluster: the real operator (client-node
 * 1.4) against the fake API server on 127.0.0.1, on the signed demo. Two instances of one image
 * mount their own Secrets; a grant mapping the other's Secret is refused; a purge requested on the
 * cluster's log deletes the instance's Plugin, PluginGrant and own Secret through the API, records
 * `plugin.uninstalled` once with what went, and one left open while no operator ran converges when
 * the operator starts again.
 */
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Deployment } from "kubernetes-models/apps/v1";
import { parse as parseYaml } from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { EventLog } from "../../src/events/index.js";
import { runOperator } from "../../src/kube/operator.js";
import { NAMESPACE } from "../../src/plugins/constants.js";
import { requestUninstall } from "../../src/app/index.js";
import { clusterReconcilerFactory } from "../../src/compose/index.js";
import { FakeApiServer } from "./fake-apiserver.js";
import { EXAMPLES, OPERATOR_START_MS, operatorOptions, putTrustedSigners, setOperatorEnv, until, withOperatorLog } from "./operator-fixture.js";

type Obj = Record<string, unknown> & { metadata: Record<string, unknown>; spec: Record<string, unknown> };
const NS = NAMESPACE;

let server: FakeApiServer;
let dir: string;
let restoreEnv: () => void = () => undefined;
let replica: { controller: AbortController; done: Promise<void> } | null = null;
let failure: unknown;

function start(): void {
  const controller = new AbortController();
  const done = runOperator(operatorOptions(server, "replica-a", "token-a", join(dir, "replica-a"), controller.signal), clusterReconcilerFactory).catch((err: unknown) => {
    failure = err;
  });
  replica = { controller, done };
}

async function stop(): Promise<void> {
  replica?.controller.abort();
  await replica?.done;
  replica = null;
}

// The first wait of the file, and the one after a restart, include the operator's start.
const wait = (what: string, p: () => boolean | Promise<boolean>): Promise<void> => until(what, p, () => failure, OPERATOR_START_MS);
/** Each test's own limit: past its longest wait, so a wait's error names what never happened. */
const TIMEOUT = OPERATOR_START_MS + 30_000;

const withLog = <T>(fn: (store: EventLog) => Promise<T>): Promise<T> => withOperatorLog(dir, fn);

/** The demo's ledger-view installed under `name`, with a grant whose Secrets are `secrets`. */
async function install(name: string, secrets: Record<string, unknown>): Promise<void> {
  const plugin = parseYaml(await readFile(join(EXAMPLES, "plugins/ledger-view.yaml"), "utf8")) as Obj;
  const grant = parseYaml(await readFile(join(EXAMPLES, "plugins/ledger-view-grant.yaml"), "utf8")) as Obj;
  plugin.metadata["name"] = name;
  grant.metadata["name"] = name;
  delete grant.spec["secrets"];
  Object.assign(grant.spec, secrets);
  server.put(plugin);
  server.put(grant);
}

function mounted(name: string): string[] | null {
  const dep = server.get("apps/v1", "Deployment", NS, `plugin-${name}`);
  if (dep === undefined) return null;
  const clean = JSON.parse(JSON.stringify(dep)) as Record<string, unknown> & { metadata: Record<string, unknown> };
  for (const k of ["managedFields", "resourceVersion", "uid", "creationTimestamp", "generation"]) delete clean.metadata[k];
  delete clean["status"];
  new Deployment(clean as ConstructorParameters<typeof Deployment>[0]).validate();
  const volumes = (dep["spec"] as { template: { spec: { volumes: { secret?: { secretName: string } }[] } } }).template.spec.volumes;
  return volumes.flatMap((v) => (v.secret === undefined ? [] : [v.secret.secretName])).sort();
}

const secretExists = (name: string): boolean => server.get("v1", "Secret", NS, name) !== undefined;
const putSecret = (name: string): void => void server.put({ apiVersion: "v1", kind: "Secret", metadata: { name, namespace: NS }, data: { token: "c2VjcmV0" } });

async function typesOf(name: string): Promise<string[]> {
  return withLog(async (store) => (await store.read({ stream: `plugin/${name}` })).map((e) => e.type));
}

beforeAll(async () => {
  restoreEnv = setOperatorEnv();
  server = await FakeApiServer.start();
  dir = await mkdtemp(join(tmpdir(), "openfief-instances-e2e-"));
  await putTrustedSigners(server);
  start();
});

afterAll(async () => {
  await stop();
  await server.close();
  await rm(dir, { recursive: true, force: true });
  restoreEnv();
});

describe("one Secret per instance and uninstall --purge, in a cluster (fake API server, real operator)", () => {
  it("runs two instances of one image, each mounting its own Secret", { timeout: TIMEOUT }, async () => {
    await install("ledger-main", { secretRoles: [{ role: "ledger-view-session" }] });
    await install("ledger-kids", { secretRoles: [{ role: "ledger-view-session" }] });
    await wait("both Deployments", () => mounted("ledger-main") !== null && mounted("ledger-kids") !== null);
    expect(mounted("ledger-main")).toEqual(["ledger-main-ledger-view-session"]);
    expect(mounted("ledger-kids")).toEqual(["ledger-kids-ledger-view-session"]);
  });

  it("refuses a third instance's grant that maps ledger-main's Secret: a recorded verdict, no Deployment", { timeout: TIMEOUT }, async () => {
    await install("ledger-guest", { secretRoles: [{ role: "ledger-view-session", secret: "ledger-main-ledger-view-session" }] });
    await wait("the grant verdict", async () => (await typesOf("ledger-guest")).includes("grant.verdict"));
    const verdict = await withLog(async (store) => store.lookups.lastOf("plugin/ledger-guest", ["grant.verdict"], Number.MAX_SAFE_INTEGER));
    expect(verdict?.data).toMatchObject({ ok: false, errors: [{ code: "foreign_secret", path: "spec.secretRoles[0].secret" }] });
    expect(mounted("ledger-guest")).toBeNull();
    expect(mounted("ledger-main")).toEqual(["ledger-main-ledger-view-session"]);
  });

  it("purges ledger-kids: the operator deletes its Plugin, its PluginGrant and its Secret through the API, keeps ledger-main's, records plugin.uninstalled once", { timeout: TIMEOUT }, async () => {
    putSecret("ledger-kids-ledger-view-session");
    putSecret("ledger-main-ledger-view-session");
    // What `openfief delete plugin ledger-kids --purge --store <the cluster's log>` (or the console's Uninstall) records.
    const request = await withLog((store) => requestUninstall(store, "ledger-kids", "owner:cli"));
    expect(request.secrets).toEqual(["ledger-kids-ledger-view-session"]);
    await wait("ledger-kids uninstalled", async () => (await typesOf("ledger-kids")).includes("plugin.uninstalled"));
    expect(server.get("openfief.io/v1alpha1", "Plugin", NS, "ledger-kids")).toBeUndefined();
    expect(server.get("openfief.io/v1alpha1", "PluginGrant", NS, "ledger-kids")).toBeUndefined();
    expect(server.get("openfief.io/v1alpha1", "Plugin", NS, "ledger-main")).toBeDefined();
    expect(secretExists("ledger-kids-ledger-view-session")).toBe(false);
    expect(secretExists("ledger-main-ledger-view-session")).toBe(true);
    expect(mounted("ledger-kids")).toBeNull();
    for (const path of [`/api/v1/namespaces/${NS}/secrets/ledger-kids-ledger-view-session`, `/apis/openfief.io/v1alpha1/namespaces/${NS}/plugins/ledger-kids`, `/apis/openfief.io/v1alpha1/namespaces/${NS}/plugingrants/ledger-kids`]) {
      expect(server.requests.some((r) => r.method === "DELETE" && r.path === path), path).toBe(true);
    }
    const done = await withLog(async (store) => store.read({ stream: "plugin/ledger-kids", type: "plugin.uninstalled" }));
    expect(done.map((e) => e.data)).toEqual([expect.objectContaining({ request: request.seq, secrets: ["ledger-kids-ledger-view-session"], resources: [{ kind: "PluginGrant", outcome: "removed" }, { kind: "Plugin", outcome: "removed" }] })]);
    // The resources seen before they went are not a new installation: nothing after the intent brings it back.
    await new Promise((r) => setTimeout(r, 300));
    const after = (await withLog(async (store) => store.read({ stream: "plugin/ledger-kids" }))).filter((e) => e.seq > request.seq).map((e) => e.type);
    expect(after).not.toContain("plugin.observed");
    expect(after).not.toContain("grant.observed");
    expect(mounted("ledger-kids")).toBeNull();
  });

  it("finishes a purge left open while no operator ran, once: its Plugin deleted, the grant and Secret already gone recorded as such", { timeout: TIMEOUT }, async () => {
    await stop();
    server.remove("openfief.io/v1alpha1", "PluginGrant", NS, "ledger-main");
    server.remove("v1", "Secret", NS, "ledger-main-ledger-view-session");
    const request = await withLog((store) => requestUninstall(store, "ledger-main", "owner:cli"));
    expect(await typesOf("ledger-main")).not.toContain("plugin.uninstalled");
    start();
    await wait("ledger-main uninstalled", async () => (await typesOf("ledger-main")).includes("plugin.uninstalled"));
    // Passes go on; the event stays single.
    await new Promise((r) => setTimeout(r, 300));
    const events = (await withLog(async (store) => store.read({ stream: "plugin/ledger-main" }))).filter((e) => e.seq > request.seq);
    expect(events.filter((e) => e.type === "plugin.uninstalled").map((e) => e.data)).toEqual([{
      name: "ledger-main", request: request.seq, grant: true, secrets: [], absent: ["ledger-main-ledger-view-session"], module: null,
      resources: [{ kind: "PluginGrant", outcome: "absent" }, { kind: "Plugin", outcome: "removed" }],
    }]);
    expect(events.map((e) => e.type)).not.toContain("plugin.observed");
    expect(server.get("openfief.io/v1alpha1", "Plugin", NS, "ledger-main")).toBeUndefined();
  });
});
