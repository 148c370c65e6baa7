import { describe, expect, it } from "vitest";
import { GATEWAY_LIMITS, RateBuckets, WatchSlots, gatewayLimits, gatewayLimitsProblems } from "./limits.js";

describe("a rate bucket", () => {
  it("lets a burst through, then one a refill, and says how long to wait", () => {
    const clock = { t: 0 };
    const b = new RateBuckets({ perSecond: 2, burst: 3 }, () => clock.t);
    expect([b.take("u"), b.take("u"), b.take("u"), b.take("u")]).toEqual([null, null, null, 1]);
    clock.t = 500;
    expect([b.take("u"), b.take("u")]).toEqual([null, 1]);
    expect(b.take("v")).toBeNull();
  });

  it("asks for a wait of whole seconds, at least one", () => {
    const b = new RateBuckets({ perSecond: 0.1, burst: 1 }, () => 0);
    b.take("u");
    expect(b.take("u")).toBe(10);
  });
});

describe("watch slots", () => {
  it.each([
    [{ perUser: 1, perInstallation: 5, total: 5 }, "user"],
    [{ perUser: 5, perInstallation: 1, total: 5 }, "installation"],
    [{ perUser: 5, perInstallation: 5, total: 1 }, "total"],
  ] as const)("refuse past %j with the %s cap, and free a slot when a watch ends", (caps, scope) => {
    const s = new WatchSlots(caps);
    const first = s.acquire("alice", "view.1");
    expect(first.ok).toBe(true);
    expect(s.acquire("alice", "view.1")).toEqual({ ok: false, scope });
    if (first.ok) {
      first.release();
      first.release();
    }
    expect(s.open).toBe(0);
    expect(s.acquire("alice", "view.1").ok).toBe(true);
  });
});

describe("the limits", () => {
  it("default where a setting names nothing, and take what it names", () => {
    expect(gatewayLimits()).toEqual(GATEWAY_LIMITS);
    const l = gatewayLimits({ rate: { perUser: { burst: 5 } }, watches: { total: 3 }, refusals: { perSource: 1 } });
    expect(l.rate.perUser).toEqual({ perSecond: GATEWAY_LIMITS.rate.perUser.perSecond, burst: 5 });
    expect(l.watches.total).toBe(3);
    expect(l.refusals.perSource).toBe(1);
    expect(gatewayLimitsProblems(l)).toEqual([]);
  });

  it("name every problem at once", () => {
    expect(gatewayLimitsProblems(gatewayLimits({ rate: { perUser: { perSecond: 0, burst: 0.5 } }, watches: { perUser: -1 }, refusals: { windowMs: 5 } }))).toEqual([
      "rate.perUser.perSecond must be a positive number", "rate.perUser.burst must be a whole number of at least 1", "watches.perUser must be a whole number",
      "refusals.windowMs must be a whole number of at least 1000",
    ]);
  });
});
