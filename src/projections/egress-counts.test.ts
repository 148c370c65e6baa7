/** The egress counts: spans that cover a window exactly, and counts kept incrementally that equal a count from zero. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openStore } from "../events/index.js";
import type { EventLog } from "../events/index.js";
import { withFile } from "../../test/support/sqlite-file.js";
import { COUNT_UNITS, countSpans, EgressCounts } from "./egress-counts.js";

const DAY = 86_400_000;
const T0 = Date.parse("2026-12-01T00:00:00Z");

describe("the spans of a window", () => {
  it.each<[string, number, number, [number, number, number][]]>([
    ["within one minute: seconds", T0 + 5_000, T0 + 9_000, [[0, T0 + 5_000, T0 + 9_000]]],
    ["a whole day: one row", T0, T0 + DAY, [[3, T0, T0 + DAY]]],
    ["across midnight: hours, minutes and seconds either side", T0 - 3_601_000, T0 + 61_000,
      [[0, T0 - 3_601_000, T0 - 3_600_000], [2, T0 - 3_600_000, T0], [1, T0, T0 + 60_000], [0, T0 + 60_000, T0 + 61_000]]],
    ["empty", T0, T0, []],
  ])("%s", (_what, lo, hi, spans) => {
    expect(countSpans(lo, hi).map((s) => [s.level, s.from, s.to])).toEqual(spans);
  });

  it("cover any window of whole seconds exactly, each span aligned to its unit, at most seven", () => {
    fc.assert(fc.property(fc.integer({ min: 0, max: 40 * DAY / 1000 }), fc.integer({ min: 0, max: 40 * DAY / 1000 }), (a, b) => {
      const lo = T0 + a * 1000;
      const hi = lo + b * 1000;
      const spans = countSpans(lo, hi);
      expect(spans.length).toBeLessThanOrEqual(7);
      let at = lo;
      for (const s of spans) {
        const unit = COUNT_UNITS[s.level] as number;
        expect([s.from, s.from % unit, s.to % unit]).toEqual([at, 0, 0]);
        at = s.to;
      }
      expect(at).toBe(b === 0 ? lo : hi);
    }));
  });
});

describe("counts kept as decisions arrive", () => {
  let dir: string;
  let store: EventLog;
  let now = T0;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "openfief-egress-counts-"));
    store = await openStore({ file: join(dir, "log.db"), clock: () => new Date(now) });
  });
  afterAll(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const rows = (): unknown[] => withFile(store.location, (db) => db.prepare("SELECT * FROM proj_egress_counts ORDER BY level, start, plugin, host, port").raw().all());

  it("equal the counts made from zero, however the log was caught up in parts", async () => {
    const counts = new EgressCounts(store);
    const decision = fc.record({ plugin: fc.constantFrom("a", "b"), host: fc.constantFrom("x.example", "X.Example", "y.example"), allowed: fc.boolean(), at: fc.integer({ min: 0, max: 2 * DAY }) });
    await fc.assert(fc.asyncProperty(fc.array(fc.array(decision, { maxLength: 12 }), { minLength: 1, maxLength: 5 }), async (parts) => {
      for (const part of parts) {
        for (const d of part) {
          now = T0 + d.at;
          await store.append([{ stream: `egress/${d.plugin}`, type: "egress.decision", actor: "egress", data: { plugin: d.plugin, host: d.host, port: 443, allowed: d.allowed, reason: d.allowed ? "listed" : "not_listed" , rules: 1} }]);
          // Other events between the decisions are read past, not counted.
          await store.append([{ stream: `plugin/${d.plugin}`, type: "grant.deleted", actor: "owner:cli", data: { name: d.plugin } }]);
        }
        await counts.catchUp();
      }
      expect(await counts.checkpoint()).toBe(await store.head());
      const kept = rows();
      expect(await counts.rebuild()).toBe((await store.read({ type: "egress.decision" })).length);
      expect(rows()).toEqual(kept);
    }), { numRuns: 30 });
  });
});
