import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openStore } from "../events/index.js";
import type { EventLog } from "../events/index.js";
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
let store: EventLog;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "openfief-reconciler-"));
  store = await openStore({ file: join(dir, "log.db") });
});

afterEach(async () => {
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

/** A reconciler whose image check admits every image and whose target runs `during` once, while it removes a plugin's objects. */
function reconciler(during: () => unknown): Reconciler {
  let once = true;
  const target = new DirectoryTarget(join(dir, "cluster"));
  const removePlugin = target.removePlugin.bind(target);
  target.removePlugin = async (plugin) => {
    if (once) {
      once = false;
      await during();
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

async function grant(egress: string[]): Promise<void> {
  await store.append([{ stream: "plugin/nbp-fx", type: "grant.observed", data: { name: "nbp-fx", spec: { capabilities: ["connector"], egress: egress.map((host) => ({ host })) } }, actor: "owner:test" }]);
}

describe("Reconciler", () => {
  it("starts a pass over when the owner writes to the plugin's stream mid-pass, so it never decides on stale facts", async () => {
    await store.append([{ stream: "plugin/nbp-fx", type: "plugin.observed", data: { name: "nbp-fx", spec: { image: IMAGE, manifest: MANIFEST } }, actor: "owner:test" }]);
    await grant(["api.nbp.pl"]);
    // v1 runs nothing (a host is pending); while its stopped state is applied, the owner approves.
    const [result] = await reconciler(() => grant(["api.nbp.pl", "static.nbp.pl"])).reconcileAll();
    expect(result?.decision?.plan).toMatchObject({ outcome: "current", pending: { egress: [] } });
    const decisions = await store.read({ stream: "plugin/nbp-fx", type: "rollout.decided" });
    expect(decisions.map((d) => (d.data as { plan: { outcome: string } }).plan.outcome)).toEqual(["none", "current"]);
  });

  it("appends nothing on a second pass over unchanged facts", async () => {
    await store.append([{ stream: "plugin/nbp-fx", type: "plugin.observed", data: { name: "nbp-fx", spec: { image: IMAGE, manifest: MANIFEST } }, actor: "owner:test" }]);
    await grant(["api.nbp.pl", "static.nbp.pl"]);
    const r = reconciler(() => undefined);
    await r.reconcileAll();
    const head = await store.head();
    const [again] = await r.reconcileAll();
    expect(again?.appended).toEqual([]);
    expect(await store.head()).toBe(head);
  });
});

/** The types of the events appended since `from`, in order, with the plugin's stream or `trust`. */
async function appendedSince(from: number): Promise<string[]> {
  return (await store.read({ afterSeq: from })).map((e) => `${e.stream} ${e.type}`);
}

const V1 = { stream: "plugin/nbp-fx", type: "plugin.observed", data: { name: "nbp-fx", spec: { image: IMAGE, manifest: MANIFEST } }, actor: "owner:test" };

describe("a reconcile pass, given the log, appends", () => {
  it.each<[string, () => Promise<unknown>, string[]]>([
    ["nothing for an empty log", () => Promise.resolve(), []],
    ["a verdict, a config verdict, a decision running nothing (a host is pending), its stopped workload and the apply", async () => { await store.append([V1]); await grant(["api.nbp.pl"]); }, [
      "trust signature.verdict", "plugin/nbp-fx config.verdict", "plugin/nbp-fx rollout.decided", "plugin/nbp-fx workload.desired", "plugin/nbp-fx workload.applied",
    ]],
    ["the same steps, with the workload running, once everything asked for is granted", async () => { await store.append([V1]); await grant(["api.nbp.pl", "static.nbp.pl"]); }, [
      "trust signature.verdict", "plugin/nbp-fx config.verdict", "plugin/nbp-fx rollout.decided", "plugin/nbp-fx workload.desired", "plugin/nbp-fx workload.applied",
    ]],
  ])("%s", async (_what, given, expected) => {
    await given();
    const from = await store.head();
    await reconciler(() => undefined).reconcileAll();
    expect(await appendedSince(from)).toEqual(expected);
  });

  it("a decision and a stopped workload when the Plugin is deleted, and nothing more on the next pass", async () => {
    await store.append([V1]);
    await grant(["api.nbp.pl", "static.nbp.pl"]);
    const r = reconciler(() => undefined);
    await r.reconcileAll();
    await store.append([{ stream: "plugin/nbp-fx", type: "plugin.deleted", data: { name: "nbp-fx" }, actor: "owner:test" }]);
    const from = await store.head();
    await r.reconcileAll();
    expect(await appendedSince(from)).toEqual(["plugin/nbp-fx rollout.decided", "plugin/nbp-fx workload.desired", "plugin/nbp-fx workload.applied"]);
    const again = await store.head();
    await r.reconcileAll();
    expect(await appendedSince(again)).toEqual([]);
  });
});

describe("one plugin's failure", () => {
  it("is recorded once while it repeats, and the pass goes on with the other plugins", async () => {
    const otherImage = `registry.example/other@sha256:${"b".repeat(64)}`;
    await store.append([V1, { ...V1, stream: "plugin/other", data: { name: "other", spec: { image: otherImage, manifest: MANIFEST } } }]);
    const verifier = new ImageVerifier({
      clock: () => 0,
      check: async (image) => ({ image: image.toString(), digest: image.digest, outcome: "unverified", signers: [{ name: "owner", kind: "owner" }], identities: [], rejectedBundles: [] }),
    });
    // The verdict store breaks for nbp-fx's image only: an adapter that fails on one plugin's input.
    const log = storeVerdictLog(store);
    let broken = true;
    const recorder = new VerdictRecorder({
      last: (d, m) => log.last(d, m),
      append: (v, actor, cause) => {
        if (broken && v.image === IMAGE) throw new Error("the verdict store is unreachable");
        return log.append(v, actor, cause);
      },
    }, { trustRoot: "t", catalog: "c" });
    const r = new Reconciler({ store, verifier, recorder, target: new DirectoryTarget(join(dir, "cluster")), topology: TOPOLOGY, logger: pino({ level: "silent" }) });

    const results = await r.reconcileAll();
    expect(results.map((x) => [x.name, x.error ?? null])).toEqual([["nbp-fx", "the verdict store is unreachable"], ["other", null]]);
    expect(await store.read({ stream: "plugin/other", type: "rollout.decided" })).toHaveLength(1);
    expect((await store.read({ type: "reconcile.failed" })).map((e) => e.data)).toEqual([{ name: "nbp-fx", error: "the verdict store is unreachable" }]);
    await r.reconcileAll();
    expect(await store.read({ type: "reconcile.failed" })).toHaveLength(1);
    broken = false;
    const healed = await r.reconcileAll();
    expect(healed.map((x) => x.error ?? null)).toEqual([null, null]);
    expect(await store.read({ stream: "plugin/nbp-fx", type: "rollout.decided" })).toHaveLength(1);
  });
});
