import { describe, expect, it } from "vitest";
import { AnonymousRefusalLimit } from "./anonymous-limit.js";

function limit(o: Partial<ConstructorParameters<typeof AnonymousRefusalLimit>[0]> = {}) {
  const clock = { t: 0, now() { return this.t; } };
  return { clock, l: new AnonymousRefusalLimit({ perSourceBurst: 2, perSourceRefillMs: 1000, globalBurst: 3, globalRefillMs: 1000, maxSources: 2, ...o, clock }) };
}

describe("AnonymousRefusalLimit", () => {
  it("records a burst per source, drops the rest, and hands the dropped count to the next recorded one", () => {
    const { clock, l } = limit();
    expect([l.admit("a"), l.admit("a"), l.admit("a"), l.admit("a")]).toEqual([
      { record: true, dropped: 0 }, { record: true, dropped: 0 }, { record: false }, { record: false },
    ]);
    clock.t = 1000;
    expect(l.admit("a")).toEqual({ record: true, dropped: 2 });
  });

  it("caps all sources together", () => {
    const { l } = limit({ maxSources: 10 });
    expect(["a", "a", "b", "b", "c"].map((s) => l.admit(s).record)).toEqual([true, true, true, false, false]);
  });

  it("tracks a bounded number of sources", () => {
    const { l } = limit({ globalBurst: 100 });
    for (const s of ["a", "b", "c", "d"]) l.admit(s);
    expect(l.sources).toBe(2);
  });
});
