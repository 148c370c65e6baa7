import { describe, expect, it } from "vitest";
import { backoffMs, DEFAULT_SYNC_BACKOFF, dueAt, nextSlot, parseDuration, parseSyncSchedule, slotJitterMs } from "./schedule.js";
import type { SyncSchedule } from "./schedule.js";
import { parsePlugin } from "./validate.js";

const at = (iso: string): Date => new Date(iso);
function schedule(value: unknown): SyncSchedule {
  const r = parseSyncSchedule(value, "spec.sync");
  if (!r.ok) throw new Error(JSON.stringify(r.errors));
  return r.value;
}

describe("parseDuration", () => {
  it.each([["90s", 90_000], ["15m", 900_000], ["6h", 21_600_000], ["1d", 86_400_000], ["0m", null], ["1.5h", null], ["h", null], ["10", null], ["1w", null]])("%s", (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });
});

describe("parseSyncSchedule", () => {
  it("reads an interval and a cron, normalized, and a parsed one parses to itself", () => {
    const a = schedule({ every: "6h", jitter: "10m" });
    expect(a).toMatchObject({ everyMs: 21_600_000, jitterMs: 600_000, text: { every: "6h", jitter: "10m" } });
    const b = schedule({ cron: " 30  16 * * 1-5 " });
    expect(b).toMatchObject({ cron: "30 16 * * 1-5", jitterMs: 0, text: { cron: "30 16 * * 1-5", jitter: "0s" } });
    expect(schedule(b.text)).toEqual(b);
  });

  it.each([
    [{}, "spec.sync"],
    [{ every: "1h", cron: "* * * * *" }, "spec.sync"],
    [{ every: "30s" }, "spec.sync.every"],
    [{ every: "32d" }, "spec.sync.every"],
    [{ every: 60 }, "spec.sync.every"],
    [{ cron: "* * * *" }, "spec.sync.cron"],
    [{ cron: "60 * * * *" }, "spec.sync.cron"],
    [{ cron: "* * 0 * *" }, "spec.sync.cron"],
    [{ cron: "5-1 * * * *" }, "spec.sync.cron"],
    [{ cron: "*/0 * * * *" }, "spec.sync.cron"],
    [{ cron: "@daily" }, "spec.sync.cron"],
    [{ every: "1h", jitter: "1h" }, "spec.sync.jitter"],
    [{ cron: "0 0 * * *", jitter: "7h" }, "spec.sync.jitter"],
    [{ every: "1h", jitter: 5 }, "spec.sync.jitter"],
    [{ every: "1h", at: "noon" }, "spec.sync.at"],
  ])("refuses %j at %s", (value, path) => {
    const r = parseSyncSchedule(value, "spec.sync");
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.errors.map((e) => e.path)).toContain(path);
  });

  it("refuses a value that is not an object", () => {
    const r = parseSyncSchedule("6h", "spec.sync");
    expect(r.ok ? null : r.errors[0]?.code).toBe("invalid_type");
  });
});

describe("nextSlot", () => {
  it("adds the interval", () => {
    expect(nextSlot(schedule({ every: "6h" }), at("2026-12-02T10:00:00Z"))?.toISOString()).toBe("2026-12-02T16:00:00.000Z");
  });

  it.each([
    ["30 16 * * 1-5", "2026-12-02T10:00:00Z", "2026-12-02T16:30:00.000Z"],
    ["30 16 * * 1-5", "2026-12-02T16:30:00Z", "2026-12-03T16:30:00.000Z"],
    ["30 16 * * 1-5", "2026-12-04T17:00:00Z", "2026-12-07T16:30:00.000Z"], // Friday evening → Monday
    ["*/15 * * * *", "2026-12-02T10:07:59Z", "2026-12-02T10:15:00.000Z"],
    ["0 0 1 * *", "2026-12-02T00:00:00Z", "2027-01-01T00:00:00.000Z"],
    ["0 0 29 2 *", "2026-12-02T00:00:00Z", "2028-02-29T00:00:00.000Z"],
    ["0 6 1 * 0", "2026-12-02T00:00:00Z", "2026-12-06T06:00:00.000Z"], // day-of-month OR day-of-week (Sunday)
    ["0 6 * * 7", "2026-12-02T00:00:00Z", "2026-12-06T06:00:00.000Z"], // 7 is Sunday too
    ["5/20 1 * * *", "2026-12-02T01:06:00Z", "2026-12-02T01:25:00.000Z"],
  ])("%s after %s is %s", (cron, after, next) => {
    expect(nextSlot(schedule({ cron }), at(after))?.toISOString()).toBe(next);
  });

  it("is null for a date that never comes", () => {
    expect(nextSlot(schedule({ cron: "0 0 31 2 *" }), at("2026-12-02T00:00:00Z"))).toBeNull();
  });
});

describe("jitter", () => {
  it("is the same for the same instance and slot, within the window, and spreads instances", () => {
    const s = schedule({ every: "1h", jitter: "10m" });
    const slot = at("2026-12-02T10:00:00Z");
    expect(dueAt(s, "ecb-fx", slot)).toEqual(dueAt(s, "ecb-fx", slot));
    const spread = new Set<number>();
    for (let i = 0; i < 50; i++) {
      const j = slotJitterMs(`bank-${i}`, slot, 600_000);
      expect(j).toBeGreaterThanOrEqual(0);
      expect(j).toBeLessThanOrEqual(600_000);
      spread.add(Math.floor(j / 60_000));
    }
    expect(spread.size).toBeGreaterThan(5);
    expect(slotJitterMs("ecb-fx", slot, 0)).toBe(0);
  });
});

describe("backoffMs", () => {
  it("doubles from the base and stops at the cap", () => {
    expect([1, 2, 3, 4, 5, 6, 7, 50].map((n) => backoffMs(DEFAULT_SYNC_BACKOFF, n))).toEqual([30_000, 60_000, 120_000, 240_000, 480_000, 900_000, 900_000, 900_000]);
  });
});

describe("Plugin.spec.sync", () => {
  const manifest = (capabilities: string[]) => ({ capabilities, egress: [], secrets: [], dataTiers: [] });
  const image = `localhost/x@sha256:${"a".repeat(64)}`;

  it("is kept, normalized, on a connector", () => {
    const r = parsePlugin({ name: "bank", spec: { image, manifest: manifest(["connector"]), sync: { every: "6h" } } });
    expect(r.ok && r.value.spec.sync).toEqual({ every: "6h", jitter: "0s" });
    const again = r.ok ? parsePlugin(r.value) : null;
    expect(again?.ok && again.value).toEqual(r.ok && r.value);
  });

  it("is refused on a plugin that is no connector, and when malformed", () => {
    const view = parsePlugin({ name: "v", spec: { image, manifest: manifest(["view"]), sync: { every: "6h" } } });
    expect(view.ok ? null : view.errors.map((e) => [e.code, e.path])).toEqual([["invalid_sync_schedule", "spec.sync"]]);
    const bad = parsePlugin({ name: "bank", spec: { image, manifest: manifest(["connector"]), sync: { every: "soon" } } });
    expect(bad.ok ? null : bad.errors.map((e) => e.path)).toEqual(["spec.sync.every"]);
  });
});
