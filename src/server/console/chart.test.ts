import { describe, expect, it } from "vitest";
import { egressChart } from "./chart.js";

function buckets(counts: readonly (readonly [number, number, number?])[]) {
  const start = Date.parse("2026-12-01T00:00:00Z");
  return counts.map(([allowed, refused, failed = 0], i) => ({ start: new Date(start + i * 3_600_000).toISOString(), end: new Date(start + (i + 1) * 3_600_000).toISOString(), allowed, refused, failed }));
}

describe("the egress chart", () => {
  const svg = egressChart(buckets([[3, 0], [0, 2, 4], [7, 1], [0, 0]])).toString();

  it("carries no style attribute and no script, so the strict CSP holds", () => {
    expect(svg).not.toMatch(/\sstyle=/i);
    expect(svg).not.toMatch(/<script|\son[a-z]+=/i);
  });

  it("draws one stacked bar per bucket, each saying its counts on hover", () => {
    expect(svg.match(/<g>/g)).toHaveLength(4);
    expect(svg.match(/<rect class="failed"/g)).toHaveLength(4);
    expect(svg).toContain("<title>02:00–03:00: 7 allowed, 1 refused, 0 failed</title>");
    expect(svg).toContain("<title>01:00–02:00: 0 allowed, 2 refused, 4 failed</title>");
    expect(svg).toContain('aria-label="Egress decisions over time: 17 in all, 3 refused, 4 failed"');
  });

  it.each<[string, [number, number, number?][], string]>([
    ["counts failed decisions in the bar's height", [[2, 1, 6]], ">10</text>"],
    ["scales the axis to a round number above the highest bar", [[7, 1]], ">10</text>"],
    ["keeps a small axis for a quiet window", [[1, 0]], ">4</text>"],
  ])("%s", (_what, counts, label) => {
    expect(egressChart(buckets(counts)).toString()).toContain(label);
  });

  it("draws nothing for no buckets", () => {
    expect(egressChart([]).toString()).toBe("");
  });
});
