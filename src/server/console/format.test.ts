import { describe, expect, it } from "vitest";
import { absoluteTime, relativeTime, richText } from "./format.js";

const HEX = "ac327d8f7783deccfac561eb6d7231f9a77c219bb934886e9e9e04dd2193321d";
const REF = `localhost/openfief-demo/nbp-fx@sha256:${HEX}`;

describe("times", () => {
  const now = new Date("2026-12-01T12:00:00Z");
  it.each<[string, string]>([
    ["2026-12-01T11:59:58Z", "just now"],
    ["2026-12-01T11:59:30Z", "30 s ago"],
    ["2026-12-01T11:55:00Z", "5 min ago"],
    ["2026-12-01T09:00:00Z", "3 h ago"],
    ["2026-11-30T12:00:00Z", "1 day ago"],
    ["2026-11-28T12:00:00Z", "3 days ago"],
    ["2026-12-01T12:10:00Z", "in 10 min"],
  ])("says %s as %s", (iso, text) => {
    expect(relativeTime(iso, now)).toBe(text);
  });

  it("writes an absolute time in UTC", () => {
    expect(absoluteTime("2026-12-01T09:08:07.123Z")).toBe("2026-12-01 09:08:07 UTC");
  });
});

describe("sentences with digests in them", () => {
  it.each<[string, string, string]>([
    ["shortens an image reference, keeping it whole on hover", `asking for ${REF}.`, `asking for <code class="img" title="${REF}">nbp-fx@sha256:ac327d8f7783…</code>.`],
    ["shortens a bare digest", `found sha256:${HEX} verified`, `found <code class="img" title="sha256:${HEX}">sha256:ac327d8f7783…</code> verified`],
    ["leaves a short or broken digest as text", "sha256:abc and sha256:", "sha256:abc and sha256:"],
    ["escapes the words around them", `<b>${REF}</b>`, `&lt;b&gt;<code class="img" title="${REF}">nbp-fx@sha256:ac327d8f7783…</code>&lt;/b&gt;`],
  ])("%s", (_what, text, expected) => {
    expect(richText(text).toString()).toBe(expected);
  });

  it("takes time in proportion to a long sentence that only looks like digests", () => {
    const text = "@sha256:".repeat(20_000);
    const out = richText(text).toString();
    expect(out.length).toBe(text.length);
  });
});
