import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openStore } from "../events/index.js";
import type { EventStore } from "../events/index.js";
import type { Topology } from "../plugins/index.js";
import { ImageVerifier, storeVerdictLog, VerdictRecorder } from "../trust/index.js";
import { DirectoryTarget } from "./directory-target.js";
import { Reconciler } from "./reconciler.js";

const IMAGE = `registry.example/nbp-fx@sha256:${"a".repeat(64)}`;
const MANIFEST = { capabilities: ["connector"], egress: [{ host: "api.nbp.pl" }, { host: "static.nbp.pl" }], secrets: [], dataTiers: [] };

const TOPOLOGY: Topology = {
  core: { clusterIP: "10.96.0.20", port: 8443, podPort: 8443, podLabels: { "app.kubernetes.io/name": "openfief-core" } },
  proxy: { clusterIP: "10.96.0.30", port: 4750, podPort: 4750, podLabels: { "app.kubernetes.io/name": "openfief-egress-proxy" } },
  pluginPort: 8080,
  coreSubject: "system:serviceaccount:openfief:openfief-core",
};

let dir: string;
let store: EventStore;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "openfief-reconciler-"));
  store = await openStore({ file: join(dir, "log.db") });
});

afterEach(async () => {
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

/** A reconciler whose image check admits every image and whose target runs `during` once, while it removes a plugin's objects. */
function reconciler(during: () => void): Reconciler {
  let once = true;
  const target = new DirectoryTarget(join(dir, "cluster"));
  const removePlugin = target.removePlugin.bind(target);
  target.removePlugin = async (plugin) => {
    if (once) {
      once = false;
      during();
    }
    await removePlugin(plugin);
  };
  const verifier = new ImageVerifier({
    clock: () => 0,
    check: async (image) => {
      return { image: image.toString(), digest: image.digest, outcome: "unverified", signers: [{ name: "owner", kind: "owner" }], identities: [], rejectedBundles: [] };
    },
  });
  return new Reconciler({
    store,
    verifier,
    recorder: new VerdictRecorder(storeVerdictLog(store), { trustRoot: "t", catalog: "c" }),
    target,
    topology: TOPOLOGY,
    logger: pino({ level: "silent" }),
  });
}

function grant(egress: string[]): void {
  store.append([{ stream: "plugin/nbp-fx", type: "grant.observed", data: { name: "nbp-fx", spec: { capabilities: ["connector"], egress: egress.map((host) => ({ host })) } }, actor: "owner:test" }]);
}

describe("Reconciler", () => {
  it("starts a pass over when the owner writes to the plugin's stream mid-pass, so it never decides on stale facts", async () => {
    store.append([{ stream: "plugin/nbp-fx", type: "plugin.observed", data: { name: "nbp-fx", spec: { image: IMAGE, manifest: MANIFEST } }, actor: "owner:test" }]);
    grant(["api.nbp.pl"]);
    // v1 runs nothing (a host is pending); while its stopped state is applied, the owner approves.
    const [result] = await reconciler(() => grant(["api.nbp.pl", "static.nbp.pl"])).reconcileAll();
    expect(result?.decision?.plan).toMatchObject({ outcome: "current", pending: { egress: [] } });
    const decisions = store.read({ stream: "plugin/nbp-fx", type: "rollout.decided" });
    expect(decisions.map((d) => (d.data as { plan: { outcome: string } }).plan.outcome)).toEqual(["none", "current"]);
  });

  it("appends nothing on a second pass over unchanged facts", async () => {
    store.append([{ stream: "plugin/nbp-fx", type: "plugin.observed", data: { name: "nbp-fx", spec: { image: IMAGE, manifest: MANIFEST } }, actor: "owner:test" }]);
    grant(["api.nbp.pl", "static.nbp.pl"]);
    const r = reconciler(() => undefined);
    await r.reconcileAll();
    const head = store.head();
    const [again] = await r.reconcileAll();
    expect(again?.appended).toEqual([]);
    expect(store.head()).toBe(head);
  });
});
