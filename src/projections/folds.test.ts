import { describe, expect, it } from "vitest";
import type { KnownEvent } from "../events/index.js";
import { evolveAllowList, evolveDecision, evolvePending, evolvePlugin, evolveVerdict, evolveWorkload } from "./folds.js";
import type { PluginState } from "./folds.js";
import { isNothingPending, viewPlan } from "./plan-view.js";

const IMG_A = `r.example/echo@sha256:${"a".repeat(64)}`;
const IMG_B = `r.example/echo@sha256:${"b".repeat(64)}`;
let seq = 0;
function ev(type: string, data: unknown, causedBy: number | null = null): KnownEvent {
  seq++;
  return { seq, stream: "plugin/echo", version: seq, type, schemaVersion: 1, time: "2026-01-01T00:00:00.000Z", actor: "t", causedBy, data, prevHash: "", hash: "" } as KnownEvent;
}
const fold = <S>(f: (s: S | undefined, e: KnownEvent) => S | undefined, events: KnownEvent[]): S | undefined => events.reduce<S | undefined>((s, e) => f(s, e), undefined);
type Pend = { capabilities: string[]; egress: { host: string; port: number }[]; secrets: string[]; dataTiers: string[] };
const NOTHING: Pend = { capabilities: [], egress: [], secrets: [], dataTiers: [] };
const plan = (outcome: string, image: string | null, pending = NOTHING) => ({ outcome, run: image === null ? null : { image }, pending, reasons: [] });
const decided = (current: string, outcome: string, run: string | null, pending = NOTHING) =>
  ev("rollout.decided", { name: "echo", inputs: { current: { image: current, manifest: {} }, currentDeployable: true, previous: null, grant: {} }, plan: plan(outcome, run, pending) });
const WAITING: Pend = { ...NOTHING, egress: [{ host: "x.example", port: 443 }] };

describe("the plugin fold", () => {
  it.each<[string, KnownEvent[], Partial<PluginState> | undefined]>([
    ["an observation sets the spec and the image asked for", [ev("plugin.observed", { name: "echo", spec: { image: IMG_A } })], { askedImage: IMG_A, deleted: false, runningImage: null }],
    ["a decision sets what runs and what is pending", [ev("plugin.observed", { name: "echo", spec: { image: IMG_B } }), decided(IMG_B, "previous", IMG_A, WAITING)], { askedImage: IMG_B, runningImage: IMG_A, outcome: "previous", pending: WAITING }],
    ["a config verdict for the asked image counts", [ev("plugin.observed", { name: "echo", spec: { image: IMG_A } }), ev("config.verdict", { name: "echo", image: IMG_A, rules: 1, ok: false, errors: [] })], { configOk: false }],
    ["a config verdict for another image is ignored", [ev("plugin.observed", { name: "echo", spec: { image: IMG_A } }), ev("config.verdict", { name: "echo", image: IMG_B, rules: 1, ok: false, errors: [] })], { configOk: null }],
    ["a grant and its deletion", [ev("grant.observed", { name: "echo", spec: { capabilities: ["view"] } }), ev("grant.deleted", { name: "echo" })], { grant: null }],
    ["a deletion clears the spec", [ev("plugin.observed", { name: "echo", spec: { image: IMG_A } }), ev("plugin.deleted", { name: "echo" })], { deleted: true, spec: null, askedImage: null }],
  ])("%s", (_what, events, expected) => {
    expect(fold(evolvePlugin, events)).toMatchObject(expected as object);
  });
});

describe("the other folds", () => {
  it("keeps the latest verdict of a digest", () => {
    const v = (outcome: string) => ev("signature.verdict", { digest: "sha256:" + "a".repeat(64), image: IMG_A, outcome, signers: [], identities: [], trustRoot: "r", catalog: "c", rules: 1 });
    expect(fold(evolveVerdict, [v("verified"), v("refused")])?.outcome).toBe("refused");
  });

  it("keeps the latest decision with its images", () => {
    expect(fold(evolveDecision, [decided(IMG_A, "current", IMG_A), decided(IMG_B, "previous", IMG_A, WAITING)])).toMatchObject({ currentImage: IMG_B, runImage: IMG_A, pending: WAITING });
  });

  it.each([
    ["waits while something is pending", [decided(IMG_B, "previous", IMG_A, WAITING)], { image: IMG_B, pending: WAITING }],
    ["clears when nothing is pending any more", [decided(IMG_B, "previous", IMG_A, WAITING), decided(IMG_B, "current", IMG_B)], undefined],
    ["clears when the plugin is deleted", [decided(IMG_B, "previous", IMG_A, WAITING), ev("plugin.deleted", { name: "echo" })], undefined],
  ])("a pending approval %s", (_what, events, expected) => {
    const got = fold(evolvePending, events);
    if (expected === undefined) expect(got).toBeUndefined();
    else expect(got).toMatchObject(expected);
  });

  it.each([
    ["a running workload has its sorted, unique entries", [ev("workload.desired", { name: "echo", running: true, objects: [], allowList: ["b.example:443", "a.example:80", "b.example:443"] })], ["a.example:80", "b.example:443"]],
    ["a stopped workload has none", [ev("workload.desired", { name: "echo", running: true, objects: [], allowList: ["a.example:80"] }), ev("workload.desired", { name: "echo", running: false, objects: [], allowList: [] })], undefined],
  ])("an allow-list: %s", (_what, events, entries) => {
    expect(fold(evolveAllowList, events)?.entries).toEqual(entries);
  });

  it("keeps the desired workload as recorded", () => {
    expect(fold(evolveWorkload, [ev("workload.desired", { name: "echo", running: true, image: IMG_A, objects: [{ kind: "Deployment" }], allowList: [] })])).toMatchObject({ running: true, image: IMG_A, objects: [{ kind: "Deployment" }] });
  });
});

describe("reading a recorded plan", () => {
  it.each([
    [null, true], [NOTHING, true], [WAITING, false], [{ capabilities: ["view"] }, false], [[], true],
  ])("isNothingPending(%j) is %s", (p, expected) => {
    expect(isNothingPending(p)).toBe(expected);
  });

  it("finds the outcome, the image run and the reasons", () => {
    expect(viewPlan({ outcome: "previous", run: { image: IMG_A }, pending: WAITING, reasons: ["approval_pending"] })).toEqual({ outcome: "previous", runImage: IMG_A, pending: WAITING, reasons: ["approval_pending"] });
    expect(viewPlan({ outcome: "none", run: null, pending: NOTHING, reasons: [] })).toEqual({ outcome: "none", runImage: null, pending: null, reasons: [] });
  });
});
