import { describe, expect, it } from "vitest";
import { isBusy, retryingBusy } from "./busy.js";

const refusal = (code: string): Error => Object.assign(new Error("database is locked"), { code });

describe("an append SQLite answers busy", () => {
  it.each(["SQLITE_BUSY", "SQLITE_BUSY_SNAPSHOT", "SQLITE_BUSY_RECOVERY", "SQLITE_LOCKED"])("is tried again after %s, and its answer returned", (code) => {
    let tries = 0;
    const waits: number[] = [];
    const got = retryingBusy(() => {
      if (++tries < 4) throw refusal(code);
      return "committed";
    }, () => 5_000, (ms) => waits.push(ms));
    expect(got).toBe("committed");
    expect(tries).toBe(4);
    expect(waits).toEqual([5, 10, 20]);
  });

  it("is not tried again after any other error", () => {
    let tries = 0;
    expect(() => retryingBusy(() => {
      tries++;
      throw refusal("SQLITE_CONSTRAINT_UNIQUE");
    }, () => 5_000, () => undefined)).toThrow("database is locked");
    expect(tries).toBe(1);
    expect(isBusy(new Error("x"))).toBe(false);
    expect(isBusy(null)).toBe(false);
  });

  it("gives up, with the last refusal, once the connection's busy timeout has passed since the first try", () => {
    let tries = 0;
    let clock = 0;
    const realNow = Date.now;
    Date.now = () => clock;
    try {
      expect(() => retryingBusy(() => {
        tries++;
        throw refusal("SQLITE_BUSY");
      }, () => 100, (ms) => { clock += ms; })).toThrow("database is locked");
    } finally {
      Date.now = realNow;
    }
    // 5 + 10 + 20 + 40 + 25 (what was left of the 100 ms): six tries, and never a wait past the timeout.
    expect(tries).toBe(6);
    expect(clock).toBe(100);
  });
});
