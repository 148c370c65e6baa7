import { describe, expect, it } from "vitest";
import { egressChart } from "./chart.js";

function buckets(counts: readonly [number, number][]) {
  const start = Date.parse("2026-12-01T00:00:00Z");
  return counts.map(([allowed, refused], i) => ({ start: new Date(start + i * 3_600_000).toISOString(), end: new Date(start + (i + 1) * 3_600_000).toISOString(), allowed, refused }));
}

describe("the egress chart", () => {
  const svg = egressChart(buckets([[3, 0], [0, 2], [7, 1], [0, 0]])).toString();

  it("carries no style attribute and no script, so the strict CSP holds", () => {
    expect(svg).not.toMatch(/\sstyle=/i);
    expect(svg).not.toMatch(/<script|\son[a-z]+=/i);
  });

  it("draws one bar pair per bucket, each saying its counts on hover", () => {
    expect(svg.match(/<g>/g)).toHaveLength(4);
    expect(svg).toContain("<title>02:00–03:00: 7 allowed, 1 refused</title>");
    expect(svg).toContain('aria-label="Egress decisions over time: 13 in all, 3 refused"');
  });

  it.each<[string, [number, number][], string]>([
    ["scales the axis to a round number above the highest bar", [[7, 1]], ">10</text>"],
    ["keeps a small axis for a quiet window", [[1, 0]], ">4</text>"],
  ])("%s", (_what, counts, label) => {
    expect(egressChart(buckets(counts)).toString()).toContain(label);
  });

  it("draws nothing for no buckets", () => {
    expect(egressChart([]).toString()).toBe("");
  });
});
