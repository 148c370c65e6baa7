/**
 * Previous from the cluster's `status.deployed` (seed 000): a `previous.observed` fact is the
 * decider's Previous until the log holds a decision of its own, folded the same way by the
 * decider's indexed lookups, by the fold the decision check uses, and by the check itself.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { DIGEST_A as D_A, DIGEST_B as D_B, GRANT, IMAGE_A as IMG_A, IMAGE_B as IMG_B, MANIFEST, MANIFEST_WIDER as WIDER } from "../../test/events/helpers.js";
import type { EventLog, KnownEvent, NewEvent, RolloutDecided, StoredEvent, VerdictOutcome } from "../events/index.js";
import { openStore } from "../events/index.js";
import { checkDecisions } from "./check-decisions.js";
import { decideRollout, emptyFacts, evolveFacts } from "./decide-rollout.js";
import type { PluginFacts } from "./decide-rollout.js";
import { loadDeciderState, previousVersion, why } from "./index.js";

const NAME = "echo";
const STREAM = `plugin/${NAME}`;

const ev = (type: string, data: Record<string, unknown>, stream = STREAM, actor = "cluster"): NewEvent => ({ stream, type, actor, data: data as NewEvent["data"] });
const observedV2 = ev("plugin.observed", { name: NAME, spec: { image: IMG_B, manifest: WIDER } });
const grant = ev("grant.observed", { name: NAME, spec: GRANT });
const configB = ev("config.verdict", { name: NAME, image: IMG_B, rules: 1, ok: true, errors: [] }, STREAM, "reconciler");
const previousA = ev("previous.observed", { name: NAME, deployed: { image: IMG_A, manifest: MANIFEST, config: { region: "eu" } } });
const deleted = ev("plugin.deleted", { name: NAME });
const verdict = (digest: string, image: string, outcome: VerdictOutcome): NewEvent => ev("signature.verdict", {
  digest, image, outcome, signers: outcome === "refused" ? [] : [{ name: "owner", kind: "owner" }], identities: [], trustRoot: "r".repeat(64), catalog: "c".repeat(64), rules: 1,
}, "trust", "trust");
/** A decision, as recorded by an earlier pass, that ran nothing. */
const ranNothing = ev("rollout.decided", {
  name: NAME,
  inputs: { current: null, currentDeployable: false, previous: null, grant: GRANT },
  plan: { outcome: "none", run: null, pending: { capabilities: [], egress: [], secrets: [], dataTiers: [] }, reasons: ["no_previous_version"] },
}, STREAM, "reconciler");

/** Folds events the way the decision check does (pure), and decides. */
function foldAndDecide(events: readonly NewEvent[]): RolloutDecided {
  let facts: PluginFacts | undefined;
  const verdicts = new Map<string, VerdictOutcome>();
  events.forEach((e, i) => {
    if (e.type === "signature.verdict") {
      const v = e.data as { digest: string; outcome: VerdictOutcome };
      verdicts.set(v.digest, v.outcome);
      return;
    }
    facts = evolveFacts(facts, { ...e, seq: i + 1, version: i + 1, time: "2026-01-01T00:00:00.000Z", causedBy: null, schemaVersion: 1, hash: "", prevHash: "" } as unknown as KnownEvent);
  });
  return decideRollout({ ...(facts ?? emptyFacts(NAME)), verdicts });
}

const passing = [verdict(D_A, IMG_A, "unverified"), verdict(D_B, IMG_B, "verified")];

describe("the decider with a previous version the cluster reported", () => {
  it.each<[string, NewEvent[], string, string | null]>([
    ["keeps the reported version running while an upgrade waits for approval", [previousA, observedV2, grant, configB, ...passing], "previous", IMG_A],
    ["runs nothing when the reported version's signature is refused", [previousA, observedV2, grant, configB, verdict(D_A, IMG_A, "refused"), verdict(D_B, IMG_B, "verified")], "none", null],
    ["runs nothing when the reported version's signature was never checked", [previousA, observedV2, grant, configB, verdict(D_B, IMG_B, "verified")], "none", null],
    ["runs nothing for a deleted Plugin, whatever the cluster reported", [previousA, observedV2, grant, configB, ...passing, deleted], "none", null],
    ["ignores a report once the log holds a decision of its own", [ranNothing, previousA, observedV2, grant, configB, ...passing], "none", null],
  ])("%s", (_what, events, outcome, image) => {
    const d = foldAndDecide(events);
    expect(d.plan).toMatchObject({ outcome });
    expect((d.plan as { run: { image: string } | null }).run?.image ?? null).toBe(image);
  });

  it("records the reported version, with its config, as the decision's previous input and runs it", () => {
    const d = foldAndDecide([previousA, observedV2, grant, configB, ...passing]);
    expect(d.inputs.previous).toEqual({ image: IMG_A, manifest: MANIFEST, config: { region: "eu" } });
    expect(d.plan).toMatchObject({ run: { image: IMG_A, config: { region: "eu" } }, pending: { egress: [{ host: "extra.example.com", port: 443 }] } });
  });

  it("takes the latest report when the cluster reported twice before any decision", () => {
    const later = ev("previous.observed", { name: NAME, deployed: { image: IMG_B, manifest: MANIFEST } });
    const d = foldAndDecide([previousA, later, observedV2, grant, configB, ...passing]);
    expect(d.inputs.previous?.image).toBe(IMG_B);
  });
});

describe("previous.observed in the store", () => {
  let dir: string;
  let store: EventLog;
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), "openfief-previous-"));
    store = await openStore({ file: join(dir, "events.db") });
  });
  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Appends what the reconciler would: the decider's answer on the log as it stands. */
  async function decide(): Promise<StoredEvent<RolloutDecided>> {
    const { state } = await loadDeciderState(store, NAME);
    return (await store.append([{ stream: STREAM, type: "rollout.decided", actor: "reconciler", causedBy: null, data: decideRollout(state) }]))[0] as StoredEvent<RolloutDecided>;
  }

  it("is recorded once for the same report (observe is idempotent)", async () => {
    expect(await store.observe(previousA)).not.toBeNull();
    expect(await store.observe(previousA)).toBeNull();
    expect(await store.read({ stream: STREAM, type: "previous.observed" })).toHaveLength(1);
  });

  it.each<[string, Record<string, unknown>]>([
    ["no deployed version", { name: NAME }],
    ["a null deployed version", { name: NAME, deployed: null }],
    ["a version without a manifest", { name: NAME, deployed: { image: IMG_A } }],
    ["an empty image", { name: NAME, deployed: { image: "", manifest: MANIFEST } }],
    ["an unknown field", { name: NAME, deployed: { image: IMG_A, manifest: MANIFEST }, extra: 1 }],
  ])("refuses a report with %s", async (_what, data) => {
    await expect(store.append([ev("previous.observed", data)])).rejects.toThrow();
  });

  it("is Previous for the indexed lookups too, until the first decision, and the decisions replay", async () => {
    await store.append([previousA, observedV2, grant, configB, ...passing]);
    const prev = await previousVersion(store, NAME);
    expect(prev?.source.type).toBe("previous.observed");
    expect(prev?.version).toEqual({ image: IMG_A, manifest: MANIFEST, config: { region: "eu" } });
    const { state, sources } = await loadDeciderState(store, NAME);
    expect(sources.previousObserved?.type).toBe("previous.observed");
    expect(sources.previousDecision).toBeNull();
    expect(decideRollout(state)).toEqual(foldAndDecide([previousA, observedV2, grant, configB, ...passing]));

    const held = await decide();
    expect(held.data.plan).toMatchObject({ outcome: "previous", run: { image: IMG_A } });
    // From now on the log's own decision is Previous; a later report changes nothing.
    await store.append([ev("previous.observed", { name: NAME, deployed: { image: IMG_B, manifest: WIDER } })]);
    expect((await previousVersion(store, NAME))?.source.seq).toBe(held.seq);
    expect((await loadDeciderState(store, NAME)).sources.previousObserved).toBeNull();
    const again = await decide();
    expect(again.data.plan).toEqual(held.data.plan);
    expect((await why(store, NAME))?.replays).toBe(true);
    expect(await checkDecisions(store)).toMatchObject({ checked: 2, divergences: [], upgrades: [] });
  });

  it("reports a decision that ignored the cluster's report as a divergence", async () => {
    await store.append([previousA, observedV2, grant, configB, ...passing]);
    const forgetful = decideRollout({ ...(await loadDeciderState(store, NAME)).state, deployed: null });
    await store.append([{ stream: STREAM, type: "rollout.decided", actor: "reconciler", causedBy: null, data: forgetful }]);
    const { divergences } = await checkDecisions(store);
    expect(divergences.map((d) => d.field)).toEqual(["inputs", "plan"]);
  });
});
