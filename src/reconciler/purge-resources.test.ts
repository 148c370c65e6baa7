/**
 * Where a target holds the Plugin and PluginGrant apart from the log (a cluster), a purge deletes
 * them first and `plugin.uninstalled` (version 2) says so; a version-1 event reads as none deleted
 * (docs/adr/0152).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { catalog, openStore } from "../events/index.js";
import type { EventLog, UninstalledResource } from "../events/index.js";
import { completeUninstalls } from "./purge.js";
import type { PurgeTarget } from "./purge.js";

let dir: string;
let store: EventLog;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "openfief-purge-resources-"));
  store = await openStore({ file: join(dir, "log.db") });
  await store.append([
    { stream: "plugin/echo", type: "plugin.observed", actor: "cluster", data: { name: "echo", spec: { image: "x" } } },
    { stream: "plugin/echo", type: "plugin.uninstall.requested", actor: "owner:cli", data: { name: "echo", grant: false, secrets: ["echo-token"], module: null } },
    { stream: "plugin/echo", type: "plugin.deleted", actor: "owner:cli", data: { name: "echo" } },
  ]);
});

afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A cluster-like target that records the order of its steps. */
function clusterTarget(steps: string[], held: Set<string>): PurgeTarget {
  return {
    removeResources: async (plugin) => {
      steps.push("resources");
      return (["PluginGrant", "Plugin"] as const).map((kind): UninstalledResource => ({ kind, outcome: held.delete(`${kind}/${plugin}`) ? "removed" : "absent" }));
    },
    removePlugin: async () => void steps.push("objects"),
    removeSecrets: async (names) => {
      steps.push("secrets");
      return { removed: [], absent: [...names] };
    },
  };
}

describe("a purge where the cluster holds the resources", () => {
  it("deletes them before the objects and Secrets, and records each as removed or already gone", async () => {
    const steps: string[] = [];
    const [done] = await completeUninstalls(store, clusterTarget(steps, new Set(["Plugin/echo"])), "operator");
    expect(steps).toEqual(["resources", "objects", "secrets"]);
    expect(done?.resources).toEqual([{ kind: "PluginGrant", outcome: "absent" }, { kind: "Plugin", outcome: "removed" }]);
    const e = await store.last("plugin/echo", "plugin.uninstalled");
    expect(e?.data.resources).toEqual(done?.resources);
    expect(await completeUninstalls(store, clusterTarget(steps, new Set()), "operator")).toEqual([]);
  });

  it("records none where the target has no such resources (a folder)", async () => {
    const [done] = await completeUninstalls(store, { removePlugin: async () => undefined, removeSecrets: async () => ({ removed: [], absent: [] }) }, "reconciler");
    expect(done?.resources).toEqual([]);
  });

  it("reads a version-1 plugin.uninstalled as one that deleted no resource", () => {
    const v1 = { name: "echo", request: 2, grant: false, secrets: [], absent: [], module: null };
    const def = catalog.get("plugin.uninstalled");
    expect(def?.version).toBe(2);
    expect(def?.upcast(1, v1)).toEqual({ ...v1, resources: [] });
    expect(def?.validate({ ...v1, resources: [] })).toBeNull();
    expect(def?.validate(v1)).not.toBeNull();
  });
});
