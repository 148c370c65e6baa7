/**
 * The owner's side of the view contract: a version asking for rules the grant does not cover waits
 * with exactly those rules pending, in the log's decision and in `why`'s words, and `approve` adds
 * exactly them, after which nothing waits.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OWNER_CLI, approve, describePending, pendingOf } from "../../src/app/index.js";
import type { EventLog } from "../../src/events/index.js";
import { pluginStream } from "../../src/events/index.js";
import { MANIFEST, PLUGIN, installView, tempStore } from "./support.js";

let store: EventLog;
let cleanup: () => Promise<void>;

beforeAll(async () => {
  ({ store, cleanup } = await tempStore());
  // The owner granted the view and one rule of the five the manifest asks for.
  await installView(store, PLUGIN, undefined, { capabilities: ["view"], rbac: [MANIFEST.rbac[0]] } as never);
});

afterAll(async () => cleanup());

describe("rules pending approval", () => {
  it("are recorded in the decision and worded for the owner", async () => {
    const decision = await store.last(pluginStream(PLUGIN), "rollout.decided");
    expect(decision?.data.plan.outcome).toBe("none");
    expect(decision?.data.plan.reasons).toContain("approval_pending");
    expect(decision?.data.plan.pending.rbac).toHaveLength(MANIFEST.rbac.length - 1);
    const words = describePending(decision?.data.plan.pending ?? { capabilities: [], egress: [], secrets: [], dataTiers: [] });
    expect(words).toContain("rule get,list,watch plugingrants of openfief.io named ledger-view");
    expect(words).not.toContain("rule get,list,watch plugins of");
  });

  it("are added to the grant by approve, exactly, leaving nothing pending", async () => {
    const before = (await pendingOf(store, PLUGIN)).pending;
    expect(before.rbac).toHaveLength(MANIFEST.rbac.length - 1);
    const r = await approve(store, PLUGIN, OWNER_CLI);
    expect(r.seq).not.toBeNull();
    expect(r.approved.rbac).toEqual(before.rbac);
    const after = (await pendingOf(store, PLUGIN)).pending;
    expect(after.rbac ?? []).toEqual([]);
    expect((await approve(store, PLUGIN, OWNER_CLI)).seq).toBeNull();
  });
});
