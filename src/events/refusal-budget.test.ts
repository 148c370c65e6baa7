import { describe, expect, it } from "vitest";
import { RefusalBudget, refusalBudgetProblem } from "./refusal-budget.js";
import { capField, textDigest } from "./capped.js";

function budget(o: ConstructorParameters<typeof RefusalBudget>[0] = {}) {
  const clock = { t: 0 };
  return { clock, b: new RefusalBudget<string>({ perSource: 2, total: 5, windowMs: 1000, maxKeys: 3, ...o }, () => clock.t) };
}

describe("the refusal budget", () => {
  it("records a key one by one up to its budget, then counts the rest of the window into one summary", () => {
    const { clock, b } = budget();
    const seen = ["r1", "r2", "r3", "r4", "r5"].map((id, i) => {
      clock.t = i * 100;
      return b.admit("k", id).record;
    });
    expect(seen).toEqual([true, true, false, false, false]);
    clock.t = 999;
    expect(b.due()).toEqual([]);
    clock.t = 1000;
    expect(b.due()).toEqual([{ key: "k", count: 3, first: { at: 200, item: "r3" }, last: { at: 400, item: "r5" } }]);
    expect(b.summarised).toBe(3);
  });

  it("starts a key's next window afresh once its window has ended", () => {
    const { clock, b } = budget();
    for (let i = 0; i < 4; i++) b.admit("k", `a${i}`);
    clock.t = 1500;
    const next = b.admit("k", "b0");
    expect(next.record).toBe(true);
    expect(next.due.map((s) => s.count)).toEqual([2]);
  });

  it("caps every key together, and summarises what the shared cap held back", () => {
    const { b } = budget({ perSource: 10, total: 3 });
    expect(["a", "b", "c", "a", "b"].map((k) => b.admit(k, k).record)).toEqual([true, true, true, false, false]);
    expect(b.drain().map((s) => [s.key, s.count])).toEqual([["a", 1], ["b", 1]]);
  });

  it("emits no summary for a key that stayed within its budget", () => {
    const { clock, b } = budget();
    b.admit("k", "x");
    clock.t = 5000;
    expect(b.due()).toEqual([]);
    expect(b.keys).toBe(0);
  });

  it("forgets the oldest key past its table's size, summarising it early", () => {
    const { b } = budget({ perSource: 0 });
    b.admit("a", "1");
    b.admit("b", "2");
    b.admit("c", "3");
    const d = b.admit("d", "4");
    expect(b.keys).toBe(3);
    expect(d.due).toEqual([{ key: "a", count: 1, first: { at: 0, item: "1" }, last: { at: 0, item: "1" } }]);
  });

  it("bounds what 10,000 refusals from one source record: a budget and one summary", () => {
    const { clock, b } = budget({ perSource: 10, total: 200, windowMs: 60_000 });
    let recorded = 0;
    const summaries: number[] = [];
    for (let i = 0; i < 10_000; i++) {
      clock.t = i;
      const a = b.admit("k", String(i));
      if (a.record) recorded++;
      summaries.push(...a.due.map((s) => s.count));
    }
    summaries.push(...b.drain().map((s) => s.count));
    expect(recorded).toBe(10);
    expect(summaries).toEqual([9990]);
  });

  it.each([
    [{ perSource: -1 }, "perSource must be a whole number"],
    [{ total: 1.5 }, "total must be a whole number"],
    [{ windowMs: 10 }, "windowMs must be a whole number of at least 1000"],
    [{ maxKeys: 0 }, "maxKeys must be at least 1"],
  ])("refuses limits %j: %s", (l, problem) => {
    expect(refusalBudgetProblem({ perSource: 1, total: 1, windowMs: 1000, maxKeys: 1, ...l })).toBe(problem);
    expect(() => new RefusalBudget(l, () => 0)).toThrow(problem);
  });
});

describe("capped caller fields", () => {
  it.each([
    ["a short value", "abc", 5, "abc", false],
    ["a value at the cap", "abcde", 5, "abcde", false],
    ["a long value", "abcdefgh", 5, "abcde", true],
    ["a surrogate pair at the cut", `abcd${"\u{1F600}"}x`, 5, "abcd", true],
  ])("keeps %s (cut: %s)", (_what, value, max, kept, cut) => {
    const c = capField(value, max);
    expect(c.value).toBe(kept);
    expect(c.digest).toBe(cut ? textDigest(value) : null);
  });

  it("tells two long values with the same start apart by their digests", () => {
    const a = capField(`${"x".repeat(300)}a`);
    const b = capField(`${"x".repeat(300)}b`);
    expect(a.value).toBe(b.value);
    expect(a.digest).not.toBe(b.digest);
    expect(a.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
  });
});
