import { describe, expect, it } from "vitest";
import { DIGEST_A as D_A, DIGEST_B as D_B, GRANT, IMAGE_A as IMG_A, IMAGE_B as IMG_B, MANIFEST, MANIFEST_WIDER as WIDER } from "../../test/events/helpers.js";
import type { VerdictOutcome } from "../events/index.js";
import { decideRollout, emptyFacts, rolloutInputsFrom } from "./decide-rollout.js";
import type { DeciderState } from "./decide-rollout.js";


function state(over: Partial<DeciderState> & { verdictsOf?: [string, VerdictOutcome][] } = {}): DeciderState {
  const { verdictsOf, ...rest } = over;
  return {
    ...emptyFacts("echo"),
    spec: { image: IMG_A, manifest: MANIFEST },
    grant: GRANT,
    configOk: new Map([[IMG_A, true], [IMG_B, true]]),
    verdicts: new Map(verdictsOf ?? [[D_A, "verified"], [D_B, "verified"]]),
    ...rest,
  };
}

describe("the rollout decider", () => {
  it.each<[string, DeciderState, boolean, string, string | null]>([
    ["runs a valid, verified, granted plugin", state(), true, "current", IMG_A],
    ["accepts an unverified (allowed) image", state({ verdictsOf: [[D_A, "unverified"]] }), true, "current", IMG_A],
    ["refuses an image whose signature was refused", state({ verdictsOf: [[D_A, "refused"]] }), false, "none", null],
    ["refuses an image without a signature verdict", state({ verdictsOf: [] }), false, "none", null],
    ["refuses an image without a config verdict", state({ configOk: new Map() }), false, "none", null],
    ["refuses a config that failed its schema", state({ configOk: new Map([[IMG_A, false]]) }), false, "none", null],
    ["runs nothing for an invalid spec", state({ spec: { image: "echo:latest", manifest: MANIFEST } }), false, "none", null],
    ["runs nothing for a deleted plugin", state({ spec: null }), false, "none", null],
    ["runs nothing when there is no grant", state({ grant: null }), true, "none", null],
    ["treats an invalid grant as no grant", state({ grant: { capabilities: ["root"] } }), true, "none", null],
    ["keeps the previous version while an upgrade waits for approval", state({ spec: { image: IMG_B, manifest: WIDER }, deployed: { image: IMG_A, manifest: MANIFEST } }), true, "previous", IMG_A],
    ["drops the previous version once its signature no longer passes", state({ spec: { image: IMG_B, manifest: WIDER }, deployed: { image: IMG_A, manifest: MANIFEST }, verdictsOf: [[D_B, "verified"], [D_A, "refused"]] }), true, "none", null],
  ])("%s", (_what, s, deployable, outcome, image) => {
    const d = decideRollout(s);
    expect(d.inputs.currentDeployable).toBe(deployable);
    expect(d.plan).toMatchObject({ outcome });
    expect((d.plan as { run: { image: string } | null }).run?.image ?? null).toBe(image);
  });

  it("records the inputs it used, as plain JSON", () => {
    const s = state({ spec: { image: IMG_B, manifest: WIDER }, deployed: { image: IMG_A, manifest: MANIFEST } });
    const { recorded } = rolloutInputsFrom(s);
    expect(recorded.current?.image).toBe(IMG_B);
    expect(recorded.previous?.image).toBe(IMG_A);
    expect(JSON.parse(JSON.stringify(decideRollout(s).inputs))).toEqual(JSON.parse(JSON.stringify(recorded)));
  });

  it("decides the same way twice (pure)", () => {
    const s = state({ spec: { image: IMG_B, manifest: WIDER }, deployed: { image: IMG_A, manifest: MANIFEST } });
    expect(decideRollout(s)).toEqual(decideRollout(s));
  });
});
