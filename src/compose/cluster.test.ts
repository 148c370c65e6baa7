import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { EventLog, KubeApplied, KubeChange, StoredEvent } from "../events/index.js";
import { openStore } from "../events/index.js";
import { deployedFromStatus } from "../kube/index.js";
import type { ApplyRecord } from "../kube/index.js";
import { CLUSTER_ACTOR, kubeChange, observePrevious, recordKubeChanges } from "./cluster.js";

const IMG = `registry.example/echo@sha256:${"a".repeat(64)}`;
const MANIFEST = { capabilities: ["connector"], egress: [{ host: "api.example.com", port: 443 }], secrets: [], dataTiers: [] };

describe("status.deployed as read from the cluster", () => {
  it.each<[string, unknown, unknown]>([
    ["a version with its manifest and config", { deployed: { image: IMG, manifest: MANIFEST, config: { a: 1 } } }, { image: IMG, manifest: MANIFEST, config: { a: 1 } }],
    ["a version without config", { deployed: { image: IMG, manifest: MANIFEST } }, { image: IMG, manifest: MANIFEST }],
    ["an image without a manifest (nothing to run it with)", { deployed: { image: IMG } }, null],
    ["an empty image", { deployed: { image: "", manifest: MANIFEST } }, null],
    ["a manifest that is not an object", { deployed: { image: IMG, manifest: [MANIFEST] } }, null],
    ["no deployed version", { observedGeneration: 1 }, null],
    ["no status", undefined, null],
  ])("reads %s", (_what, status, expected) => {
    expect(deployedFromStatus(status)).toEqual(expected);
  });
});

describe("recording the cluster's view in the log", () => {
  let dir: string;
  let store: EventLog;
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), "openfief-cluster-unit-"));
    store = await openStore({ file: join(dir, "events.db") });
  });
  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("records status.deployed once as previous.observed while the log holds no decision", async () => {
    const first = await observePrevious(store, "echo", { image: IMG, manifest: MANIFEST, config: { a: 1 } });
    expect(first).toMatchObject({ stream: "plugin/echo", type: "previous.observed", actor: CLUSTER_ACTOR, data: { name: "echo", deployed: { image: IMG, manifest: MANIFEST, config: { a: 1 } } } });
    expect(await observePrevious(store, "echo", { image: IMG, manifest: MANIFEST, config: { a: 1 } })).toBeNull();
    expect(await store.read({ type: "previous.observed" })).toHaveLength(1);
  });

  it("ignores status.deployed once the log holds a decision of its own", async () => {
    await store.append([{
      stream: "plugin/echo", type: "rollout.decided", actor: "reconciler", causedBy: null,
      data: { name: "echo", rules: 1, inputs: { current: null, currentDeployable: false, previous: null, grant: {} }, plan: { outcome: "none", run: null, pending: { capabilities: [], egress: [], secrets: [], dataTiers: [] }, reasons: [] } },
    }]);
    expect(await observePrevious(store, "echo", { image: IMG, manifest: MANIFEST })).toBeNull();
    expect(await store.read({ type: "previous.observed" })).toEqual([]);
  });

  const record = (over: Partial<ApplyRecord>): ApplyRecord => ({
    action: "applied", plugin: "echo", apiVersion: "apps/v1", kind: "Deployment", namespace: "openfief", name: "plugin-echo", fieldManager: "openfief-operator", ...over,
  });

  it.each<[string, ApplyRecord, KubeChange]>([
    ["an applied object", record({ resourceVersion: "7" }), { action: "apply", apiVersion: "apps/v1", kind: "Deployment", name: "plugin-echo", fieldManager: "openfief-operator", ok: true }],
    ["a pruned object", record({ action: "pruned", kind: "Service" }), { action: "prune", apiVersion: "apps/v1", kind: "Service", name: "plugin-echo", fieldManager: "openfief-operator", ok: true }],
    [
      "an applied allow-list key",
      record({ action: "allowlist-key-applied", apiVersion: "v1", kind: "ConfigMap", name: "openfief-egress-allowlist", fieldManager: "openfief-allowlist-echo", key: "echo" }),
      { action: "apply", apiVersion: "v1", kind: "ConfigMap", name: "openfief-egress-allowlist", fieldManager: "openfief-allowlist-echo", key: "echo", ok: true },
    ],
    [
      "a removed allow-list key",
      record({ action: "allowlist-key-removed", apiVersion: "v1", kind: "ConfigMap", name: "openfief-egress-allowlist", fieldManager: "openfief-allowlist-echo", key: "echo" }),
      { action: "prune", apiVersion: "v1", kind: "ConfigMap", name: "openfief-egress-allowlist", fieldManager: "openfief-allowlist-echo", key: "echo", ok: true },
    ],
  ])("turns %s into a kube.applied record", (_what, r, expected) => {
    expect(kubeChange(r)).toEqual(expected);
  });

  it("appends one kube.applied per plugin, caused by its latest workload.desired, and empties the batch", async () => {
    const [desired] = await store.append([{ stream: "plugin/echo", type: "workload.desired", actor: "reconciler", causedBy: null, data: { name: "echo", running: false, objects: [], allowList: [] } }]);
    const changes = new Map<string, KubeChange[]>([
      ["echo", [kubeChange(record({})), kubeChange(record({ action: "pruned", kind: "Service" }))]],
      ["leftover", [kubeChange(record({ action: "pruned", plugin: "leftover", name: "plugin-leftover" }))]],
    ]);
    const appended = await recordKubeChanges(store, changes) as StoredEvent<KubeApplied>[];
    expect(appended.map((e) => [e.stream, e.type, e.causedBy, e.data.records.length])).toEqual([
      ["plugin/echo", "kube.applied", desired?.seq, 2],
      ["plugin/leftover", "kube.applied", null, 1],
    ]);
    expect(changes.size).toBe(0);
    expect(await recordKubeChanges(store, changes)).toEqual([]);
  });
});
