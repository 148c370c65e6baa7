import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Deployment } from "kubernetes-models/apps/v1";
import { pino } from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import { openStore } from "../../src/events/index.js";
import type { EventLog } from "../../src/events/index.js";
import type { Topology } from "../../src/plugins/index.js";
import { ImageVerifier, storeVerdictLog, VerdictRecorder } from "../../src/trust/index.js";
import { DirectoryTarget } from "../../src/reconciler/index.js";
import { requestUninstall } from "../../src/app/index.js";
import { completeUninstalls } from "../../src/reconciler/index.js";
import { Reconciler } from "../../src/reconciler/index.js";

// One image, installed twice: one instance per IBKR account.
const IMAGE = `registry.example/ibkr-flex@sha256:${"c".repeat(64)}`;
const MANIFEST = { capabilities: ["connector"], egress: [], secrets: [{ name: "credentials", mountPath: "/etc/ibkr" }], dataTiers: [] };

const TOPOLOGY: Topology = {
  core: { clusterIP: "10.96.0.20", port: 8443, podPort: 8443, podLabels: { "app.kubernetes.io/name": "openfief-core" } },
  proxy: { clusterIP: "10.96.0.30", port: 4750, podPort: 4750, podLabels: { "app.kubernetes.io/name": "openfief-egress-proxy" } },
  pluginPort: 8080,
  coreSubject: "system:serviceaccount:openfief:openfief-core",
};

let dir: string;
let store: EventLog;
let target: DirectoryTarget;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "openfief-purge-"));
  store = await openStore({ file: join(dir, "log.db") });
  target = new DirectoryTarget(join(dir, "cluster"));
});

afterEach(async () => {
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

function reconciler(): Reconciler {
  const verifier = new ImageVerifier({
    clock: () => 0,
    check: async (image) => ({ image: image.toString(), digest: image.digest, outcome: "unverified", signers: [{ name: "owner", kind: "owner" }], identities: [], rejectedBundles: [] }),
  });
  return new Reconciler({ store, verifier, recorder: new VerdictRecorder(storeVerdictLog(store), { trustRoot: "t", catalog: "c" }), target, topology: TOPOLOGY, logger: pino({ level: "silent" }) });
}

async function install(name: string, grantSpec: object): Promise<void> {
  await store.append([
    { stream: `plugin/${name}`, type: "plugin.observed", data: { name, spec: { image: IMAGE, manifest: MANIFEST } }, actor: "owner:test" },
    { stream: `plugin/${name}`, type: "grant.observed", data: { name, spec: { capabilities: ["connector"], ...grantSpec } }, actor: "owner:test" },
  ]);
}

/** The Secret names the plugin's Deployment file mounts (each Deployment checked against Kubernetes' schema). */
async function mounted(name: string): Promise<string[] | null> {
  let text: string;
  try {
    text = await readFile(join(dir, "cluster", "plugins", `${name}.yaml`), "utf8");
  } catch {
    return null;
  }
  const docs = parseAllDocuments(text).map((d) => d.toJSON() as { kind: string });
  const dep = docs.find((d) => d.kind === "Deployment") as unknown as ConstructorParameters<typeof Deployment>[0];
  new Deployment(dep).validate();
  const volumes = (dep as unknown as { spec: { template: { spec: { volumes: { secret?: { secretName: string } }[] } } } }).spec.template.spec.volumes;
  return volumes.flatMap((v) => (v.secret === undefined ? [] : [v.secret.secretName]));
}

async function secretFile(name: string): Promise<void> {
  await mkdir(join(dir, "cluster", "secrets"), { recursive: true });
  await writeFile(join(dir, "cluster", "secrets", `${name}.yaml`), `apiVersion: v1\nkind: Secret\nmetadata:\n  name: ${name}\n  namespace: openfief\n`);
}

async function types(name: string): Promise<string[]> {
  return (await store.read({ stream: `plugin/${name}` })).map((e) => e.type);
}

describe("two instances of one image", () => {
  it("each mounts its own Secret, <plugin>-<role>", async () => {
    await install("ibkr-main", { secretRoles: [{ role: "credentials" }] });
    await install("ibkr-kids", { secretRoles: [{ role: "credentials" }] });
    await reconciler().reconcileAll();
    expect(await mounted("ibkr-main")).toEqual(["ibkr-main-credentials"]);
    expect(await mounted("ibkr-kids")).toEqual(["ibkr-kids-credentials"]);
    expect(await types("ibkr-kids")).not.toContain("grant.verdict");
  });

  it("refuses, as a recorded grant.verdict with its code and field, a grant that maps the other instance's Secret; the refused one runs nothing", async () => {
    await install("ibkr-main", { secretRoles: [{ role: "credentials" }] });
    await install("ibkr-kids", { secretRoles: [{ role: "credentials", secret: "ibkr-main-credentials" }] });
    await reconciler().reconcileAll();
    const [verdict] = await store.read({ stream: "plugin/ibkr-kids", type: "grant.verdict" });
    expect(verdict?.data).toMatchObject({ name: "ibkr-kids", ok: false, errors: [{ code: "foreign_secret", path: "spec.secretRoles[0].secret" }] });
    expect(await mounted("ibkr-main")).toEqual(["ibkr-main-credentials"]);
    expect(await mounted("ibkr-kids")).toBeNull();
    // The owner maps it to its own Secret: the grant is accepted and the instance runs.
    await store.append([{ stream: "plugin/ibkr-kids", type: "grant.observed", data: { name: "ibkr-kids", spec: { capabilities: ["connector"], secretRoles: [{ role: "credentials", secret: "kids-flex" }] } }, actor: "owner:test" }]);
    await reconciler().reconcileAll();
    expect(await mounted("ibkr-kids")).toEqual(["kids-flex"]);
    // A second pass over the same facts records nothing new.
    const before = await store.head();
    await reconciler().reconcileAll();
    expect(await store.head()).toBe(before);
  });

  it("refuses the later of two grants written before roles that name the same Secret", async () => {
    await install("ibkr-main", { secrets: ["credentials"] });
    await install("ibkr-kids", { secrets: ["credentials"] });
    await reconciler().reconcileAll();
    expect(await mounted("ibkr-main")).toEqual(["credentials"]);
    expect(await mounted("ibkr-kids")).toBeNull();
    const [verdict] = await store.read({ stream: "plugin/ibkr-kids", type: "grant.verdict" });
    expect(verdict?.data).toMatchObject({ ok: false, errors: [{ code: "foreign_secret", path: "spec.secrets[0]" }] });
  });
});

describe("uninstall with --purge", () => {
  it("removes the objects, the grant and the instance's own Secrets, and records what went, once", async () => {
    await install("ibkr-main", { secretRoles: [{ role: "credentials" }] });
    await install("ibkr-kids", { secretRoles: [{ role: "credentials" }] });
    await reconciler().reconcileAll();
    await secretFile("ibkr-main-credentials");
    await secretFile("ibkr-kids-credentials");
    const request = await requestUninstall(store, "ibkr-main", "owner:cli");
    expect(request).toMatchObject({ grant: true, secrets: ["ibkr-main-credentials"], module: null, resumed: false });
    // The log holds the whole intent at once: the plugin and its grant are deleted with it.
    expect((await types("ibkr-main")).slice(-3)).toEqual(["plugin.uninstall.requested", "plugin.deleted", "grant.deleted"]);
    await reconciler().reconcileAll();
    await reconciler().reconcileAll();
    const done = await store.read({ stream: "plugin/ibkr-main", type: "plugin.uninstalled" });
    expect(done.map((e) => e.data)).toEqual([{ name: "ibkr-main", request: request.seq, grant: true, secrets: ["ibkr-main-credentials"], absent: [], module: null, resources: [] }]);
    expect(await readdir(join(dir, "cluster", "secrets"))).toEqual(["ibkr-kids-credentials.yaml"]);
    expect(await mounted("ibkr-main")).toBeNull();
    expect(await mounted("ibkr-kids")).toEqual(["ibkr-kids-credentials"]);
  });

  it("records a Secret never created as not found, and converges when the process died after the intent", async () => {
    await install("ibkr-main", { secretRoles: [{ role: "credentials" }] });
    await reconciler().reconcileAll();
    const request = await requestUninstall(store, "ibkr-main", "owner:cli");
    // Run again before anything was carried out: the same intent, nothing appended.
    const head = await store.head();
    expect(await requestUninstall(store, "ibkr-main", "owner:cli")).toMatchObject({ seq: request.seq, resumed: true });
    expect(await store.head()).toBe(head);
    const [first] = await completeUninstalls(store, target, "reconciler");
    expect(first).toMatchObject({ secrets: [], absent: ["ibkr-main-credentials"] });
    expect(await completeUninstalls(store, target, "reconciler")).toEqual([]);
    await expect(requestUninstall(store, "ibkr-main", "owner:cli")).rejects.toMatchObject({ code: "not_found" });
  });

  it("never removes a Secret another installed instance mounts", async () => {
    await install("ibkr-main", { secrets: ["credentials"] });
    await install("ibkr-kids", { secretRoles: [{ role: "credentials", secret: "credentials" }] });
    // Both grants map Secret "credentials" (ibkr-kids' is refused for it): a purge of either leaves it.
    const request = await requestUninstall(store, "ibkr-kids", "owner:cli");
    expect(request.secrets).toEqual([]);
  });

  it("is refused with plugin_pinned, recording nothing, while another instance runs the plugin's module", async () => {
    const module = "d".repeat(64);
    for (const name of ["wasm-a", "wasm-b"]) {
      await install(name, {});
      await store.append([{ stream: `plugin/${name}`, type: "workload.desired", data: { name, running: true, image: IMAGE, runtime: "wasm", module, objects: [], allowList: [] }, actor: "reconciler" }]);
    }
    const head = await store.head();
    await expect(requestUninstall(store, "wasm-a", "owner:cli")).rejects.toMatchObject({ code: "plugin_pinned" });
    expect(await store.head()).toBe(head);
  });
});
