import { describe, expect, it } from "vitest";
import { AnonymousRefusalLimit } from "./anonymous-limit.js";

function limit(o: Partial<ConstructorParameters<typeof AnonymousRefusalLimit>[0]> = {}) {
  const clock = { t: 0, now() { return this.t; } };
  return { clock, l: new AnonymousRefusalLimit({ perSource: 2, total: 3, windowMs: 1000, maxKeys: 2, ...o, clock }) };
}

describe("AnonymousRefusalLimit", () => {
  it("records a budget per code and source, counts the rest, and summarises them when the window ends", () => {
    const { clock, l } = limit();
    expect([l.admit("no_token", "a"), l.admit("no_token", "a"), l.admit("no_token", "a")].map((x) => x.record)).toEqual([true, true, false]);
    clock.t = 400;
    expect(l.admit("no_token", "a").record).toBe(false);
    expect(l.due()).toEqual([]);
    clock.t = 1000;
    expect(l.due()).toEqual([{ code: "no_token", source: "a", count: 2, first: new Date(0).toISOString(), last: new Date(400).toISOString() }]);
    expect(l.admit("no_token", "a")).toEqual({ record: true, due: [] });
  });

  it("counts each code from a source apart", () => {
    const { l } = limit({ total: 100 });
    expect(["no_token", "no_token", "token_refused", "no_token"].map((c) => l.admit(c, "a").record)).toEqual([true, true, true, false]);
  });

  it("caps all sources together, and what the cap holds back is still summarised", () => {
    const { l } = limit({ maxKeys: 10 });
    expect(["a", "a", "b", "b", "c"].map((s) => l.admit("no_token", s).record)).toEqual([true, true, true, false, false]);
    expect(l.drain().map((s) => [s.source, s.count])).toEqual([["b", 1], ["c", 1]]);
  });

  it("tracks a bounded number of codes and sources, summarising the one it forgets", () => {
    const { l } = limit({ total: 100, perSource: 0 });
    l.admit("no_token", "a");
    l.admit("no_token", "b");
    const third = l.admit("no_token", "c");
    expect(l.sources).toBe(2);
    expect(third.due).toMatchObject([{ source: "a", count: 1 }]);
  });
});
