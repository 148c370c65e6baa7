import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openStore } from "../../src/events/store.js";
import type { EventLog } from "../../src/events/store.js";
import type { RolloutDecided } from "../../src/events/catalog.js";
import type { NewEvent, StoredEvent } from "../../src/events/types.js";
import { withFile } from "../support/sqlite-file.js";
import { Projector } from "../../src/projections/projector.js";
import { PROJECTIONS, pluginsProjection } from "../../src/projections/projections.js";
import { loadDeciderState, stateAt, timeline, why } from "../../src/projections/index.js";
import { blockerText } from "../../src/app/index.js";
import { decideRollout } from "../../src/projections/decide-rollout.js";
import { checkDecisions } from "../../src/projections/check-decisions.js";
import { allowListConfigData } from "../../src/projections/allowlists.js";
import type { DecisionState, PendingState, PluginState } from "../../src/projections/folds.js";
import {
  DIGEST_A, DIGEST_B, IMAGE_A, IMAGE_B, MANIFEST_WIDER, configVerdict, egressDecision, grantObserved, pluginObserved, steppingClock, tempDir, verdict,
} from "./helpers.js";

/** Appends what the reconciler would: the decider's answer on the log as it stands, caused by `cause`. */
async function decide(store: EventLog, name: string, cause: StoredEvent | undefined): Promise<StoredEvent<RolloutDecided>> {
  const { state } = await loadDeciderState(store, name);
  const [e] = await store.append([{ stream: `plugin/${name}`, type: "rollout.decided", actor: "reconciler", causedBy: cause?.seq ?? null, data: decideRollout(state) }]);
  return e as StoredEvent<RolloutDecided>;
}

async function desired(store: EventLog, name: string, decision: StoredEvent<RolloutDecided>): Promise<StoredEvent> {
  const plan = decision.data.plan as { run: { image: string; permissions: { egress: { host: string; port: number }[] } } | null };
  const data = plan.run === null
    ? { name, running: false, objects: [], allowList: [] }
    : { name, running: true, image: plan.run.image, objects: [{ kind: "Deployment", metadata: { name } }], allowList: plan.run.permissions.egress.map((h) => `${h.host}:${h.port}`) };
  return (await store.append([{ stream: `plugin/${name}`, type: "workload.desired", actor: "reconciler", causedBy: decision.seq, data }]))[0] as StoredEvent;
}

const widerSpec = (name: string): NewEvent => ({ ...pluginObserved(name, IMAGE_B), data: { name, spec: { image: IMAGE_B, manifest: MANIFEST_WIDER } } });

/** Install without a grant, grant, then an upgrade asking for one more host. Returns the seqs of note. */
async function upgradeStory(store: EventLog, name: string): Promise<{ first: StoredEvent<RolloutDecided>; granted: StoredEvent<RolloutDecided>; upgrade: StoredEvent; held: StoredEvent<RolloutDecided> }> {
  const [obs] = await store.append([pluginObserved(name), configVerdict(name, IMAGE_A)]);
  await store.observe(verdict(DIGEST_A, IMAGE_A));
  const first = await decide(store, name, obs);
  await desired(store, name, first);
  const grant = await store.observe(grantObserved(name)) ?? undefined;
  const granted = await decide(store, name, grant);
  await desired(store, name, granted);
  await store.append([egressDecision(name), egressDecision(name, false)]);
  const [upgrade] = await store.append([widerSpec(name), configVerdict(name, IMAGE_B)]);
  await store.observe(verdict(DIGEST_B, IMAGE_B));
  const held = await decide(store, name, upgrade);
  await desired(store, name, held);
  return { first, granted, upgrade: upgrade as StoredEvent, held };
}

describe("projections and queries", () => {
  let t: ReturnType<typeof tempDir>;
  let store: EventLog;
  beforeEach(async () => { t = tempDir(); store = await openStore({ file: t.file, clock: steppingClock() }); });
  afterEach(async () => { await store.close(); t.cleanup(); });

  it("plans an install without a grant as none, with everything pending", async () => {
    const { first, granted, held } = await upgradeStory(store, "echo");
    expect(first.data.plan).toMatchObject({ outcome: "none", run: null, reasons: ["approval_pending", "no_capability_granted", "no_previous_version"] });
    expect(granted.data.plan).toMatchObject({ outcome: "current", run: { image: IMAGE_A } });
    expect(held.data.plan).toMatchObject({ outcome: "previous", run: { image: IMAGE_A }, pending: { egress: [{ host: "extra.example.com", port: 443 }] } });
  });

  it("projects plugin status, latest decisions, pending approvals and allow-lists", async () => {
    await upgradeStory(store, "echo");
    const p = new Projector(store);
    await p.catchUp();
    const plugin = (await p.rows<PluginState>("plugins")).get("echo");
    expect(plugin).toMatchObject({ askedImage: IMAGE_B, runningImage: IMAGE_A, outcome: "previous", configOk: true, deleted: false });
    expect(plugin?.pending).toEqual({ capabilities: [], egress: [{ host: "extra.example.com", port: 443 }], secrets: [], dataTiers: [] });
    expect((await p.rows<DecisionState>("rollout_decisions")).get("echo")).toMatchObject({ currentImage: IMAGE_B, previousImage: IMAGE_A, runImage: IMAGE_A });
    expect((await p.rows<PendingState>("pending_approvals")).get("echo")?.image).toBe(IMAGE_B);
    expect([...(await p.rows("signature_verdicts")).keys()]).toEqual([DIGEST_A, DIGEST_B]);
    expect(await allowListConfigData(p)).toEqual({ echo: "api.example.com:443\n" });
    await store.append([{ stream: "plugin/echo", type: "plugin.deleted", actor: "cluster", data: { name: "echo" } }]);
    await p.catchUp();
    expect((await p.rows("pending_approvals")).size).toBe(0);
    expect((await p.rows("egress_allowlists")).size).toBe(0);
    expect((await p.rows<PluginState>("plugins")).get("echo")?.deleted).toBe(true);
    expect(await p.checkpoint("plugins")).toBe(await store.head());
  });

  it("rebuilds tables equal to the ones built incrementally, in place and in a fresh database", async () => {
    const p = new Projector(store, { pageSize: 3 });
    const names = ["alpha", "beta", "gamma"];
    for (const n of names) { await upgradeStory(store, n); await p.catchUp(); }
    await store.append([{ stream: "plugin/beta", type: "plugin.deleted", actor: "cluster", data: { name: "beta" } }, { stream: "plugin/gamma", type: "grant.deleted", actor: "owner:cli", data: { name: "gamma" } }]);
    await p.catchUp();
    await decide(store, "gamma", await store.last("plugin/gamma") ?? undefined);
    await p.catchUp();
    const snapshot = async (x: Projector) => Object.fromEntries(await Promise.all(x.names().map(async (n) => [n, [...(await x.rows(n))]] as const)));
    const incremental = await snapshot(p);
    expect(incremental.plugins).toHaveLength(3);

    await p.rebuild();
    expect(await snapshot(p)).toEqual(incremental);

    // The tables of another database (here another log's file) folded from this log.
    const fresh = await openStore({ file: `${t.dir}/fresh.db` });
    try {
      const q = new Projector(store, { tables: fresh.tables.projections });
      await q.catchUp();
      expect(await snapshot(q)).toEqual(incremental);
    } finally {
      await fresh.close();
    }

    const inMemory = await stateAt(store, { seq: await store.head() });
    for (const proj of PROJECTIONS) expect([...(inMemory.tables.get(proj.name) ?? [])].sort()).toEqual(incremental[proj.name]);
  });

  it("reopens with its checkpoints and catches up only what is new", async () => {
    await upgradeStory(store, "echo");
    expect((await new Projector(store).catchUp()).read).toBeGreaterThan(0);
    const again = new Projector(store);
    expect(await again.catchUp()).toMatchObject({ read: 0, applied: 0 });
    await store.append([pluginObserved("echo", IMAGE_A)]);
    expect(await again.catchUp()).toMatchObject({ read: 1 });
    expect((await again.rows<PluginState>("plugins")).get("echo")?.askedImage).toBe(IMAGE_A);
  });

  it("rebuilds a projection from zero when its version changes", async () => {
    await upgradeStory(store, "echo");
    const v1 = new Projector(store, { projections: [pluginsProjection] as never });
    await v1.catchUp();
    withFile(t.file, (db) => db.exec("DELETE FROM proj_plugins"));
    expect((await new Projector(store, { projections: [pluginsProjection] as never }).rows("plugins")).size).toBe(0);
    const v2 = new Projector(store, { projections: [{ ...pluginsProjection, version: 2 }] as never });
    expect(await v2.checkpoint("plugins")).toBe(0);
    await v2.catchUp();
    expect((await v2.rows<PluginState>("plugins")).get("echo")?.askedImage).toBe(IMAGE_B);
  });

  it("explains why a version is held back: inputs, pending, what fed the decision and its causes", async () => {
    const { granted, upgrade, held } = await upgradeStory(store, "echo");
    const answer = await why(store, "echo");
    expect(answer?.decision.seq).toBe(held.seq);
    expect(answer?.plan).toMatchObject({ outcome: "previous", runImage: IMAGE_A, reasons: ["approval_pending"] });
    expect(answer?.inputs.current?.image).toBe(IMAGE_B);
    expect(answer?.inputs.previous?.image).toBe(IMAGE_A);
    expect(answer?.deployable).toEqual({ ok: true, because: [] });
    expect(answer?.chain.map((e) => e.seq)).toEqual([upgrade.seq]);
    expect(answer?.fed.previousDecision?.seq).toBe(granted.seq);
    expect(answer?.fed.currentVerdict?.data.digest).toBe(DIGEST_B);
    expect(answer?.fed.previousVerdict?.data.digest).toBe(DIGEST_A);
    expect(answer?.replays).toBe(true);
    expect(await why(store, "nobody")).toBeNull();
  });

  it("says why the current version is not deployable", async () => {
    const [obs] = await store.append([pluginObserved("echo"), configVerdict("echo", IMAGE_A, false), grantObserved("echo")]);
    await store.append([verdict(DIGEST_A, IMAGE_A, "refused")]);
    await decide(store, "echo", obs);
    const answer = await why(store, "echo");
    expect(answer?.deployable.ok).toBe(false);
    expect(answer?.deployable.because.map(blockerText)).toEqual([
      "its signature was refused",
      "its config does not match its schema: config.url: must be a string",
    ]);
    expect(answer?.plan.outcome).toBe("none");
  });

  it("gives the state as of a sequence number or a time", async () => {
    const { granted } = await upgradeStory(store, "echo");
    const atGrant = await stateAt(store, { seq: granted.seq });
    expect((atGrant.tables.get("plugins")?.get("echo") as PluginState).runningImage).toBe(IMAGE_A);
    expect((atGrant.tables.get("plugins")?.get("echo") as PluginState).askedImage).toBe(IMAGE_A);
    const now = await stateAt(store, { seq: await store.head() });
    expect((now.tables.get("plugins")?.get("echo") as PluginState).askedImage).toBe(IMAGE_B);
    const byTime = await stateAt(store, { time: new Date(granted.time) });
    expect(byTime.seq).toBe(granted.seq);
    expect(byTime.tables).toEqual(atGrant.tables);
    expect((await stateAt(store, { time: new Date("2020-01-01T00:00:00Z") })).seq).toBe(0);
  });

  it("lists a plugin's timeline, with its egress decisions when asked", async () => {
    await upgradeStory(store, "echo");
    await upgradeStory(store, "other");
    const own = await timeline(store, "echo");
    expect(own.every((e) => e.stream === "plugin/echo")).toBe(true);
    const all = await timeline(store, "echo", { includeEgress: true });
    expect(all.length).toBe(own.length + 2);
    expect(all.map((e) => e.seq)).toEqual([...all.map((e) => e.seq)].sort((a, b) => a - b));
  });

  it("finds no divergence in an honest log, and reports a forged decision", async () => {
    await upgradeStory(store, "echo");
    await upgradeStory(store, "other");
    // 6 rollout decisions and the story's 4 egress decisions, re-decided since ADR 0032.
    expect(await checkDecisions(store)).toMatchObject({ checked: 10, divergences: [], upgrades: [] });
    const honest = decideRollout((await loadDeciderState(store, "echo")).state);
    const forgedPlan = { ...(honest.plan as object), outcome: "current", reasons: [] };
    const [forged] = await store.append([{ stream: "plugin/echo", type: "rollout.decided", actor: "mallory", data: { ...honest, plan: forgedPlan } }]);
    const forgedInputs = { ...honest, inputs: { ...honest.inputs, currentDeployable: false } };
    const [forged2] = await store.append([{ stream: "plugin/other", type: "rollout.decided", actor: "mallory", data: { ...forgedInputs, name: "other" } }]);
    const result = await checkDecisions(store);
    // Read a few events at a time, the answer is the same: no page boundary loses or repeats one.
    expect(await checkDecisions(store, { pageSize: 2 })).toEqual(result);
    expect(result.checked).toBe(12);
    expect(result.divergences.map((d) => [d.seq, d.name, d.field])).toEqual([
      [forged?.seq, "echo", "plan"],
      [forged2?.seq, "other", "inputs"],
    ]);
    expect((await why(store, "echo"))?.replays).toBe(false);
  });
});
