import { describe, expect, it } from "vitest";
import { LineCapture, logBudget, redact, redactionList, safeCut } from "./sandbox/log-lines.js";

function capture(text: string | string[], o: { lineChars?: number; callChars?: number; callLines?: number; secrets?: string[] } = {}) {
  const lines: string[] = [];
  const budget = logBudget(o.callChars ?? 10_000, o.callLines ?? 1000);
  const c = new LineCapture({ lineChars: o.lineChars ?? 20, budget, list: redactionList(o.secrets ?? []), emit: (l) => lines.push(l) });
  for (const piece of Array.isArray(text) ? text : [text]) c.write(piece);
  c.end();
  return { lines, dropped: budget.dropped };
}

describe("log capture", () => {
  it.each([
    ["splits lines and drops CR", "a\r\nb\nc", ["a", "b", "c"]],
    ["joins a line written in pieces", ["ab", "c\nd", "e\n"], ["abc", "de"]],
    ["cuts a long line at the cap", "0123456789012345678901234\nnext\n", ["01234567890123456789 [line cut]", "next"]],
    ["keeps an empty line", "\n\nx", ["", "", "x"]],
  ])("%s", (_name, text, want) => {
    expect(capture(text).lines).toEqual(want);
  });

  it.each([
    ["a Secret in a line", "token=SECRETVALUE!", ["token=[REDACTED]!"]],
    ["a Secret split across writes", ["token=SECR", "ETVALUE\n"], ["token=[REDACTED]"]],
    ["a Secret straddling the cut", `${"x".repeat(15)}SECRETVALUE tail`, [`${"x".repeat(15)} [line cut]`]],
    ["a Secret far past the cut", `${"x".repeat(40)}SECRETVALUE\n`, [`${"x".repeat(20)} [line cut]`]],
    ["a Secret that spans lines", "one MULTI\nLINE two", ["one [REDACTED]", "[REDACTED] two"]],
  ])("redacts %s before anything is cut", (_name, text, want) => {
    expect(capture(text, { secrets: ["SECRETVALUE", "MULTI\nLINE"] }).lines).toEqual(want);
  });

  it("drops what is past the call's cap and counts it", () => {
    const r = capture("aaaa\nbbbb\ncccc\n", { callChars: 6 });
    expect(r.lines).toEqual(["aaaa", "bb"]);
    expect(r.dropped).toBe(6);
  });

  it("drops lines past the call's line cap, however short", () => {
    const r = capture("a\nb\nc\nd\n", { callLines: 2 });
    expect(r.lines).toEqual(["a", "b"]);
    expect(r.dropped).toBe(2);
  });

  it("never cuts through a redaction marker at the call's cap", () => {
    const r = capture("ab SECRETVALUE\n", { callChars: 8, secrets: ["SECRETVALUE"] });
    expect(r.lines).toEqual(["ab "]);
  });

  it("replaces a Secret containing another whole", () => {
    expect(redact("key=abc-long", redactionList(["abc", "abc-long"]))).toBe("key=[REDACTED]");
  });

  it.each([
    ["no secret near", "abcdefgh", 4, ["zz"], 4],
    ["a secret across the cut", "abXYZdef", 4, ["XYZ"], 2],
    ["overlapping occurrences", "aaaaaa", 3, ["aaa"], 0],
  ])("safeCut: %s", (_name, text, cap, list, want) => {
    expect(safeCut(text, cap, list)).toBe(want);
  });
});
