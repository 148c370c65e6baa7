import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { EMPTY_PENDING } from "./effective.js";
import type { Pending } from "./effective.js";
import { parseImageRef } from "./image-ref.js";
import type { ImageRef } from "./image-ref.js";
import { RolloutReason, planRollout, rolloutPlanToJSON, sameRolloutPlan } from "./rollout.js";
import type { PluginVersion, RolloutInput, RolloutOutcome, RolloutPlan } from "./rollout.js";
import type { EgressHost, GrantSpec, Manifest } from "./types.js";
import { EMPTY_GRANT_SPEC } from "./types.js";

function image(n: string): ImageRef {
  const r = parseImageRef(`ghcr.io/openfief/ibkr-flex@sha256:${n.repeat(64)}`);
  if (!r.ok) throw new Error("image");
  return r.value;
}
const h = (host: string, port = 443): EgressHost => ({ host, port });
const manifest = (m: Partial<Manifest>): Manifest => ({ capabilities: ["connector"], egress: [], secrets: [], dataTiers: [], ...m });
const grant = (g: Partial<GrantSpec>): GrantSpec => ({ ...EMPTY_GRANT_SPEC, capabilities: ["connector"], ...g });

const OLD_HOST = h("ndcdyn.interactivebrokers.com");
const NEW_HOST = h("gdcdyn.interactivebrokers.com");
const V1: PluginVersion = { image: image("1"), manifest: manifest({ egress: [OLD_HOST] }), config: { queryId: "1" } };
const V2: PluginVersion = { image: image("2"), manifest: manifest({ egress: [OLD_HOST, NEW_HOST] }), config: { queryId: "1" } };
const GRANT_V1 = grant({ egress: [OLD_HOST] });

interface Case {
  name: string;
  current: PluginVersion | null;
  currentDeployable: boolean;
  previous: PluginVersion | null;
  grant: GrantSpec;
  outcome: RolloutOutcome;
  runImage: ImageRef | null;
  runEgress: EgressHost[];
  pending: Pending;
  reasons: RolloutReason[];
}

const CASES: Case[] = [
  {
    name: "first install within its grant runs the current version",
    current: V1, currentDeployable: true, previous: null, grant: GRANT_V1,
    outcome: "current", runImage: V1.image, runEgress: [OLD_HOST], pending: EMPTY_PENDING, reasons: [],
  },
  {
    name: "upgrade requesting a new host keeps the previous version",
    current: V2, currentDeployable: true, previous: V1, grant: GRANT_V1,
    outcome: "previous", runImage: V1.image, runEgress: [OLD_HOST], pending: { ...EMPTY_PENDING, egress: [NEW_HOST] },
    reasons: [RolloutReason.ApprovalPending],
  },
  {
    name: "approving the new host lets the upgrade run",
    current: V2, currentDeployable: true, previous: V1, grant: grant({ egress: [NEW_HOST, OLD_HOST] }),
    outcome: "current", runImage: V2.image, runEgress: [NEW_HOST, OLD_HOST], pending: EMPTY_PENDING, reasons: [],
  },
  {
    name: "first install asking more than its grant runs nothing",
    current: V2, currentDeployable: true, previous: null, grant: GRANT_V1,
    outcome: "none", runImage: null, runEgress: [], pending: { ...EMPTY_PENDING, egress: [NEW_HOST] },
    reasons: [RolloutReason.ApprovalPending, RolloutReason.NoPreviousVersion],
  },
  {
    name: "first install without any grant runs nothing and lists everything as pending",
    current: V1, currentDeployable: true, previous: null, grant: EMPTY_GRANT_SPEC,
    outcome: "none", runImage: null, runEgress: [], pending: { ...EMPTY_PENDING, capabilities: ["connector"], egress: [OLD_HOST] },
    reasons: [RolloutReason.ApprovalPending, RolloutReason.NoCapabilityGranted, RolloutReason.NoPreviousVersion],
  },
  {
    name: "grant narrowed while an upgrade waits takes effect at once",
    current: V2, currentDeployable: true, previous: V1, grant: grant({ egress: [] }),
    outcome: "previous", runImage: V1.image, runEgress: [], pending: { ...EMPTY_PENDING, egress: [NEW_HOST, OLD_HOST] },
    reasons: [RolloutReason.ApprovalPending],
  },
  {
    name: "grant narrowed under the running version runs it again with less",
    current: V1, currentDeployable: true, previous: V1, grant: grant({ egress: [] }),
    outcome: "previous", runImage: V1.image, runEgress: [], pending: { ...EMPTY_PENDING, egress: [OLD_HOST] },
    reasons: [RolloutReason.ApprovalPending],
  },
  {
    name: "grant approving more adds nothing",
    current: V1, currentDeployable: true, previous: null,
    grant: grant({ capabilities: ["connector", "view"], egress: [OLD_HOST, NEW_HOST, h("extra.example.com")], secrets: ["x"], dataTiers: ["raw"] }),
    outcome: "current", runImage: V1.image, runEgress: [OLD_HOST], pending: EMPTY_PENDING, reasons: [],
  },
  {
    name: "a current version whose signature is not verified keeps the previous one",
    current: V2, currentDeployable: false, previous: V1, grant: grant({ egress: [OLD_HOST, NEW_HOST] }),
    outcome: "previous", runImage: V1.image, runEgress: [OLD_HOST], pending: EMPTY_PENDING,
    reasons: [RolloutReason.CurrentNotDeployable],
  },
  {
    name: "a current version that is not deployable and has nothing before it runs nothing",
    current: V1, currentDeployable: false, previous: null, grant: GRANT_V1,
    outcome: "none", runImage: null, runEgress: [], pending: EMPTY_PENDING,
    reasons: [RolloutReason.CurrentNotDeployable, RolloutReason.NoPreviousVersion],
  },
  {
    name: "an invalid spec keeps the previous version with nothing pending",
    current: null, currentDeployable: false, previous: V1, grant: GRANT_V1,
    outcome: "previous", runImage: V1.image, runEgress: [OLD_HOST], pending: EMPTY_PENDING,
    reasons: [RolloutReason.NoCurrentVersion],
  },
  {
    name: "no capability granted stops the current and the previous version",
    current: V2, currentDeployable: true, previous: V1, grant: grant({ capabilities: [], egress: [OLD_HOST, NEW_HOST] }),
    outcome: "none", runImage: null, runEgress: [], pending: { ...EMPTY_PENDING, capabilities: ["connector"] },
    reasons: [RolloutReason.ApprovalPending, RolloutReason.NoCapabilityGranted, RolloutReason.PreviousNoCapabilityGranted],
  },
  {
    name: "a new Secret waits for approval while the previous version runs without it",
    current: { image: image("3"), manifest: manifest({ egress: [OLD_HOST], secrets: [{ name: "creds", mountPath: "/etc/creds" }] }) },
    currentDeployable: true, previous: V1, grant: GRANT_V1,
    outcome: "previous", runImage: V1.image, runEgress: [OLD_HOST], pending: { ...EMPTY_PENDING, secrets: ["creds"] },
    reasons: [RolloutReason.ApprovalPending],
  },
];

describe("planRollout", () => {
  it.each(CASES)("$name", (c) => {
    const plan = planRollout({ current: c.current, currentDeployable: c.currentDeployable, previous: c.previous, grant: c.grant });
    expect(plan.outcome).toBe(c.outcome);
    expect(plan.pending).toEqual(c.pending);
    expect(plan.reasons).toEqual(c.reasons);
    if (c.runImage === null) {
      expect(plan.run).toBeNull();
    } else {
      expect(plan.run?.version.image.equals(c.runImage)).toBe(true);
      expect(plan.run?.permissions.egress).toEqual(c.runEgress);
      expect(plan.run?.version).toBe(c.outcome === "current" ? c.current : c.previous);
    }
  });

  it("keeps the Secret mount path of the version that runs, as its manifest asks", () => {
    const current: PluginVersion = { image: image("4"), manifest: manifest({ secrets: [{ name: "creds", mountPath: "/moved" }] }) };
    const plan = planRollout({ current, currentDeployable: true, previous: null, grant: grant({ secrets: ["creds"] }) });
    expect(plan.run?.permissions.secrets).toEqual([{ name: "creds", mountPath: "/moved" }]);
  });
});

describe("rolloutPlanToJSON", () => {
  it("records the plan as plain JSON with the image as a reference string", () => {
    const plan = planRollout({ current: V2, currentDeployable: true, previous: V1, grant: GRANT_V1 });
    const json = rolloutPlanToJSON(plan);
    expect(JSON.parse(JSON.stringify(json))).toEqual(json);
    expect(json).toEqual({
      outcome: "previous",
      run: {
        image: V1.image.toString(),
        manifest: { capabilities: ["connector"], egress: [OLD_HOST], secrets: [], dataTiers: [] },
        config: { queryId: "1" },
        permissions: { capabilities: ["connector"], egress: [OLD_HOST], secrets: [], dataTiers: [] },
      },
      pending: { capabilities: [], egress: [NEW_HOST], secrets: [], dataTiers: [] },
      reasons: ["approval_pending"],
    });
  });

  it("records a plan that runs nothing with run null", () => {
    const json = rolloutPlanToJSON(planRollout({ current: V2, currentDeployable: true, previous: null, grant: GRANT_V1 }));
    expect(json.run).toBeNull();
    expect(json.outcome).toBe("none");
  });

  it("compares plans by what they decide", () => {
    const a = planRollout({ current: V2, currentDeployable: true, previous: V1, grant: GRANT_V1 });
    const again = planRollout({ current: V2, currentDeployable: true, previous: V1, grant: GRANT_V1 });
    const approved = planRollout({ current: V2, currentDeployable: true, previous: V1, grant: grant({ egress: [OLD_HOST, NEW_HOST] }) });
    expect(sameRolloutPlan(a, again)).toBe(true);
    expect(sameRolloutPlan(a, approved)).toBe(false);
  });
});

// --- properties -------------------------------------------------------------------------------

const HOSTS = [OLD_HOST, NEW_HOST, h("api.example.com"), h("api.example.com", 8443)];
const manifestArb = fc.record({
  capabilities: fc.subarray<Manifest["capabilities"][number]>(["connector", "view"], { minLength: 1 }),
  egress: fc.subarray(HOSTS),
  secrets: fc.subarray(["a", "b"]).map((ns) => ns.map((name) => ({ name, mountPath: `/m/${name}` }))),
  dataTiers: fc.subarray(["raw", "pii"]),
});
const grantArb = fc.record({
  capabilities: fc.subarray<Manifest["capabilities"][number]>(["connector", "view"]),
  egress: fc.subarray(HOSTS),
  secrets: fc.subarray(["a", "b", "c"]),
  dataTiers: fc.subarray(["raw", "pii", "x"]),
});
const versionArb = fc.option(
  fc.record({ image: fc.constantFrom(image("a"), image("b")), manifest: manifestArb }),
  { nil: null },
);

describe("planRollout, as properties", () => {
  it("runs the current version exactly when it is deployable and nothing is pending", () => {
    fc.assert(
      fc.property(versionArb, fc.boolean(), versionArb, grantArb, (current, deployable, previous, g) => {
        const plan: RolloutPlan = planRollout({ current, currentDeployable: deployable, previous, grant: g });
        const nothingPending = current !== null && Object.values(plan.pending).every((l) => l.length === 0);
        const runsCurrent = plan.outcome === "current";
        const consistent = (plan.run === null) === (plan.outcome === "none") && (plan.outcome === "current") === (plan.reasons.length === 0);
        return runsCurrent === (current !== null && deployable && nothingPending) && consistent;
      }),
      { numRuns: 200 },
    );
  });

  it("never runs more than the grant approves, whichever version runs", () => {
    fc.assert(
      fc.property(versionArb, fc.boolean(), versionArb, grantArb, (current, deployable, previous, g) => {
        const plan = planRollout({ current, currentDeployable: deployable, previous, grant: g });
        if (plan.run === null) return true;
        const p = plan.run.permissions;
        return (
          p.capabilities.every((c) => g.capabilities.includes(c)) &&
          p.egress.every((x) => g.egress.some((y) => y.host === x.host && y.port === x.port)) &&
          p.secrets.every((s) => g.secrets.includes(s.name)) &&
          p.dataTiers.every((t) => g.dataTiers.includes(t))
        );
      }),
      { numRuns: 200 },
    );
  });

  it("gives the same JSON whatever the order of the input lists", () => {
    fc.assert(
      fc.property(versionArb, fc.boolean(), versionArb, grantArb, (current, deployable, previous, g) => {
        const rev = <T>(xs: readonly T[]): T[] => [...xs].reverse();
        const rm = (m: Manifest): Manifest => ({ capabilities: rev(m.capabilities), egress: rev(m.egress), secrets: rev(m.secrets), dataTiers: rev(m.dataTiers) });
        const rv = (v: PluginVersion | null): PluginVersion | null => (v === null ? null : { image: v.image, manifest: rm(v.manifest) });
        const g2: GrantSpec = { capabilities: rev(g.capabilities), egress: rev(g.egress), secrets: rev(g.secrets), dataTiers: rev(g.dataTiers) };
        const a = planRollout({ current, currentDeployable: deployable, previous, grant: g });
        const b = planRollout({ current: rv(current), currentDeployable: deployable, previous: rv(previous), grant: g2 });
        return sameRolloutPlan(a, b) && JSON.stringify(rolloutPlanToJSON(a)) === JSON.stringify(rolloutPlanToJSON(b));
      }),
      { numRuns: 200 },
    );
  });
});

describe("planRollout on malformed input", () => {
  it.each<[string, unknown, RolloutOutcome, RolloutReason[]]>([
    ["no input at all", undefined, "none", [RolloutReason.NoCurrentVersion, RolloutReason.NoPreviousVersion]],
    ["a current version whose image is a string", { current: { ...V1, image: "ghcr.io/x@sha256:1" }, currentDeployable: true, previous: null, grant: GRANT_V1 }, "none", [RolloutReason.NoCurrentVersion, RolloutReason.NoPreviousVersion]],
    ["a current version without a manifest", { current: { image: image("1") }, currentDeployable: true, previous: V1, grant: GRANT_V1 }, "previous", [RolloutReason.NoCurrentVersion]],
    ["a deployable flag that is only truthy", { current: V1, currentDeployable: "yes", previous: null, grant: GRANT_V1 }, "none", [RolloutReason.CurrentNotDeployable, RolloutReason.NoPreviousVersion]],
    ["a grant that is not shaped as one", { current: V1, currentDeployable: true, previous: null, grant: { egress: "all" } }, "none", [RolloutReason.ApprovalPending, RolloutReason.NoCapabilityGranted, RolloutReason.NoPreviousVersion]],
    ["a malformed previous version", { current: V2, currentDeployable: true, previous: { image: 1, manifest: null }, grant: GRANT_V1 }, "none", [RolloutReason.ApprovalPending, RolloutReason.NoPreviousVersion]],
  ])("plans for %s, failing closed", (_what, input, outcome, reasons) => {
    const plan = planRollout(input as RolloutInput);
    expect([plan.outcome, plan.reasons]).toEqual([outcome, reasons]);
  });
});
