/**
 * The integrity page's decision cards: a divergence names the rules it was re-decided under, and an
 * upgrade's effect is shown apart, not as a fault (ADR 0150). The report is made here by hand: the
 * released rules have one version, so no real log holds an upgrade's effect yet.
 */
import { describe, expect, it } from "vitest";
import type { IntegrityReport } from "../../app/index.js";
import { decisionsCard, upgradesCard } from "./integrity-page.js";
import { proofCard } from "./witnesses-card.js";

const report = (decisions: Partial<IntegrityReport["decisions"]>): IntegrityReport => ({
  chain: { verifiedBefore: 0, result: { ok: true, count: 9 } },
  guards: { ok: true, missing: [] },
  ok: true,
  head: { seq: 9, hash: "0".repeat(64), time: null },
  decisions: { upTo: 9, checked: 3, diverged: 0, divergences: [], more: 0, upgrades: [], upgradesCapped: false, ...decisions },
});

describe("the integrity page's decisions", () => {
  it("says every decision reproduces under its own rules, and shows no upgrade card when there is nothing to show", () => {
    const r = report({});
    expect(decisionsCard(r).toString()).toContain("each decision under the rules it names, gives every one of the 3 decisions");
    expect(upgradesCard(r).toString()).toBe("");
  });

  it("names the family and the rules of a divergence", () => {
    const r = report({ diverged: 1, divergences: [{ seq: 5, name: "nbp-fx", family: "rollout", rules: 1, field: "plan", recorded: {}, expected: {} }] });
    expect(decisionsCard(r).toString()).toContain("event 5 (<a href=\"/plugins/nbp-fx\">nbp-fx</a>): the recorded plan differ from what rollout rules 1 decide");
  });

  it("names a verdict's family, and the image a signature verdict is about without a plugin link", () => {
    const r = report({ diverged: 2, divergences: [
      { seq: 6, name: "nbp-fx", family: "config", rules: 1, field: "config.verdict", recorded: {}, expected: {} },
      { seq: 8, name: "registry.example/fx@sha256:aa", family: "signature", rules: 1, field: "catalog.outcome", recorded: "verified", expected: "unverified" },
    ] });
    const card = decisionsCard(r).toString();
    expect(card).toContain("event 6 (<a href=\"/plugins/nbp-fx\">nbp-fx</a>): the recorded config.verdict differ from what the config verdict&#39;s rules 1 decide");
    expect(card).toContain("event 8 (<code>registry.example/fx@sha256:aa</code>): the recorded catalog.outcome differ from what the signature verdict&#39;s rules 1 decide");
  });

  it("shows an upgrade's effect apart, saying it is not a fault, and 'at least' once past the kept ones", () => {
    const upgrade = { seq: 7, name: "ecb-fx", family: "egress" as const, rules: 1, today: 2, field: "egress.list" as const, before: "listed", after: "not_listed" };
    const card = upgradesCard(report({ upgrades: [upgrade] })).toString();
    expect(card).toContain("Under today's rules");
    expect(card).toContain("1 decisions made under older rules would be decided differently today: what the upgrade changed, not a fault.");
    expect(card).toContain("event 7 (<a href=\"/plugins/ecb-fx\">ecb-fx</a>): its egress.list under egress rules 1, another under today's 2");
    expect(upgradesCard(report({ upgrades: [upgrade], upgradesCapped: true })).toString()).toContain("At least 1 decisions");
  });
});

describe("the integrity page's proof card", () => {
  const text = (m: { toString(): string }) => m.toString().replace(/<[^>]+>/g, "");

  it("offers no download before the first checkpoint, and says when there will be one", () => {
    const card = proofCard({ covered: null, head: 9, signs: true }).toString();
    expect(card).not.toContain("<form");
    expect(text(card)).toContain("No event can be proven yet: a proof needs a signed checkpoint that covers the event. Proofs can be downloaded after the next checkpoint");
    expect(text(proofCard({ covered: null, head: 9, signs: false }))).toContain("Proofs can be downloaded once the log signs checkpoints (see Signed checkpoints above).");
  });

  it("takes events up to the newest checkpoint, and says when the later ones get theirs", () => {
    const card = proofCard({ covered: 7, head: 9, signs: true }).toString();
    expect(card).toContain('min="1" max="7"');
    expect(text(card)).toContain("Events 1 to 7 have one (the newest checkpoint covers them). Events 8 to 9 get one after the next checkpoint.");
    expect(text(proofCard({ covered: 8, head: 9, signs: true }))).toContain("Event 9 gets one after the next checkpoint.");
    expect(text(proofCard({ covered: 9, head: 9, signs: true }))).toContain("Every event so far (1 to 9) has one.");
    expect(text(proofCard({ covered: 7, head: 9, signs: false }))).toContain("Events 8 to 9 get one after the next checkpoint, once the log signs checkpoints again");
  });
});
