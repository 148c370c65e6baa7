/** Egress decisions as an owner reads them: filtered pages, and counts by destination and over time. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openStore } from "../events/index.js";
import type { EventLog } from "../events/index.js";
import { egressDecisions, egressSummary, MAX_EGRESS_SCAN } from "./egress-view.js";

let dir: string;
let store: EventLog;
let now = Date.parse("2026-12-01T00:00:00Z");

async function decide(plugin: string, host: string, allowed: boolean, at: number, port = 443) {
  now = at;
  await store.append([{ stream: `egress/${plugin}`, type: "egress.decision", actor: "egress", data: { plugin, host, port, allowed, reason: allowed ? "listed" : "not_listed", rules: 1 } }]);
}

const H = 3_600_000;
const T0 = Date.parse("2026-12-01T00:00:00Z");

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "openfief-egress-view-"));
  store = await openStore({ file: join(dir, "log.db"), clock: () => new Date(now) });
  await decide("nbp-fx", "api.nbp.pl", true, T0 + 0.5 * H); // seq 1
  await decide("nbp-fx", "api.nbp.pl", true, T0 + 1.5 * H); // 2
  await decide("nbp-fx", "static.nbp.pl", false, T0 + 1.6 * H); // 3
  await decide("ledger", "Telemetry.Example", false, T0 + 2.5 * H); // 4
  await decide("nbp-fx", "API.nbp.pl", true, T0 + 3.5 * H); // 5
  await store.append([{ stream: "plugin/nbp-fx", type: "grant.deleted", actor: "owner:cli", data: { name: "nbp-fx" } }]); // 6
});

afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("a page of egress decisions", () => {
  it.each<[string, Parameters<typeof egressDecisions>[1], number[], number | null]>([
    ["holds every plugin's", {}, [1, 2, 3, 4, 5], null],
    ["keeps to one plugin", { plugin: "ledger" }, [4], null],
    ["matches a host whatever its case", { host: "api.NBP.pl" }, [1, 2, 5], null],
    ["keeps to one outcome", { outcome: "refused" }, [3, 4], null],
    ["pages by seq", { limit: 2 }, [1, 2], 2],
    ["goes on after a seq", { afterSeq: 2, limit: 2 }, [3, 4], 4],
  ])("%s", async (_what, q, seqs, next) => {
    const page = await egressDecisions(store, q);
    expect(page.decisions.map((d) => d.seq)).toEqual(seqs);
    expect(page.next).toBe(next);
  });

  it("matches a host with letters beyond ASCII whatever their case, and no other", async () => {
    await decide("ledger", "BÜCHER.example", false, T0 + 5 * H);
    await decide("ledger", "bucher.example", false, T0 + 5 * H);
    expect((await egressDecisions(store, { host: "bücher.EXAMPLE" })).decisions.map((d) => d.host)).toEqual(["BÜCHER.example"]);
  });

  it("looks at no more than a bounded stretch of decisions, and says where to go on", async () => {
    const allowed = { stream: "egress/bulk", type: "egress.decision", actor: "egress", data: { plugin: "bulk", host: "a.example", port: 443, allowed: true, reason: "listed", rules: 1 } };
    await store.append(Array.from({ length: MAX_EGRESS_SCAN }, () => allowed));
    await decide("bulk", "b.example", false, T0 + 5 * H);
    // After seq 6 (the fixture), the scan ends at the last of the allowed ones, before the refusal.
    const first = await egressDecisions(store, { plugin: "bulk", outcome: "refused" });
    expect(first).toEqual({ decisions: [], next: 6 + MAX_EGRESS_SCAN });
    expect((await egressDecisions(store, { plugin: "bulk", outcome: "refused", afterSeq: first.next ?? 0 })).decisions.map((d) => [d.seq, d.host])).toEqual([[7 + MAX_EGRESS_SCAN, "b.example"]]);
  });

  it("refuses a host filter no host could match", async () => {
    await expect(egressDecisions(store, { host: "x".repeat(254) })).rejects.toThrow(/host must be 1 to 253/);
  });
});

describe("a summary of a window", () => {
  it("counts each plugin's destinations (host names without case), refused ones first", async () => {
    const s = await egressSummary(store, { since: new Date(T0), until: new Date(T0 + 4 * H), buckets: 4 });
    expect([s.allowed, s.refused, s.truncated]).toEqual([3, 2, false]);
    expect(s.plugins.map((p) => [p.plugin, p.destinations.map((d) => [d.host, d.allowed, d.refused])])).toEqual([
      ["ledger", [["telemetry.example", 0, 1]]],
      ["nbp-fx", [["static.nbp.pl", 0, 1], ["api.nbp.pl", 3, 0]]],
    ]);
    expect(s.recent.map((r) => r.seq)).toEqual([5, 4, 3, 2, 1]);
  });

  it("counts every decision of a window, however many (it read and parsed at most 50,000 of them)", async () => {
    now = T0 + 5 * H;
    const d = { stream: "egress/bulk", type: "egress.decision", actor: "egress", data: { plugin: "bulk", host: "a.example", port: 443, allowed: true, reason: "listed", rules: 1 } };
    for (let i = 0; i < 6; i++) await store.append(Array.from({ length: 10_000 }, () => d));
    const s = await egressSummary(store, { since: new Date(T0 + 4 * H), until: new Date(T0 + 6 * H), plugin: "bulk" });
    expect([s.allowed, s.refused, s.truncated]).toEqual([60_000, 0, false]);
  });

  it("cuts the window into equal buckets", async () => {
    const s = await egressSummary(store, { since: new Date(T0), until: new Date(T0 + 4 * H), buckets: 4 });
    expect(s.buckets.map((b) => [b.allowed, b.refused])).toEqual([[1, 0], [1, 1], [0, 1], [1, 0]]);
    expect(s.buckets[1]?.start).toBe("2026-12-01T01:00:00.000Z");
  });

  it("counts only what falls in the window", async () => {
    const s = await egressSummary(store, { since: new Date(T0 + H), until: new Date(T0 + 2 * H), plugin: "nbp-fx", buckets: 1 });
    expect([s.allowed, s.refused]).toEqual([1, 1]);
  });

  it("keeps a granted host that did not resolve apart from one refused by policy", async () => {
    now = T0 + 3.6 * H;
    await store.append([{ stream: "egress/nbp-fx", type: "egress.decision", actor: "egress", data: { plugin: "nbp-fx", host: "api.nbp.pl", port: 443, allowed: false, reason: "dns_nxdomain", rules: 1, addresses: [] } }]); // 7
    const s = await egressSummary(store, { since: new Date(T0), until: new Date(T0 + 4 * H), buckets: 4 });
    expect([s.allowed, s.refused, s.failed]).toEqual([3, 2, 1]);
    const nbp = s.plugins.find((p) => p.plugin === "nbp-fx");
    expect([nbp?.allowed, nbp?.refused, nbp?.failed]).toEqual([3, 1, 1]);
    expect(nbp?.destinations.map((d) => [d.host, d.allowed, d.refused, d.failed])).toEqual([["api.nbp.pl", 3, 0, 1], ["static.nbp.pl", 0, 1, 0]]);
    expect(s.buckets.map((b) => [b.allowed, b.refused, b.failed])).toEqual([[1, 0, 0], [1, 1, 0], [0, 1, 0], [1, 0, 1]]);
    expect(s.recent[0]).toMatchObject({ seq: 7, outcome: "failed", reason: "dns_nxdomain" });
    expect((await egressDecisions(store, { outcome: "failed" })).decisions.map((d) => d.seq)).toEqual([7]);
    expect((await egressDecisions(store, { outcome: "refused" })).decisions.map((d) => d.seq)).toEqual([3, 4]);
  });

  it.each<[string, Parameters<typeof egressSummary>[1], RegExp]>([
    ["refuses a window that ends before it starts", { since: new Date(T0), until: new Date(T0) }, /must end after it starts/],
    ["refuses too many buckets", { since: new Date(T0), until: new Date(T0 + H), buckets: 201 }, /buckets must be/],
  ])("%s", async (_what, o, message) => {
    await expect(egressSummary(store, o)).rejects.toThrow(message);
  });
});

describe("a summary read from the counts kept as decisions arrive", () => {
  const DAY = 24 * H;
  const SECOND = 1000;
  const floorSecond = (t: number): number => Math.floor(t / SECOND) * SECOND;

  interface Made { plugin: string; host: string; port: number; allowed: boolean; at: number }
  const made: fc.Arbitrary<Made> = fc.record({
    plugin: fc.constantFrom("nbp-fx", "ledger", "ecb-fx"),
    host: fc.constantFrom("api.nbp.pl", "API.nbp.pl", "static.nbp.pl", "Telemetry.Example"),
    port: fc.constantFrom(443, 8443),
    allowed: fc.boolean(),
    // Three days around midnights, hours, minutes and seconds, to the millisecond, in any order.
    at: fc.integer({ min: 0, max: 3 * DAY }).map((t) => T0 + t),
  });
  const window = fc.record({
    since: fc.integer({ min: -DAY, max: 3 * DAY }),
    length: fc.integer({ min: 1, max: 4 * DAY }),
    buckets: fc.integer({ min: 1, max: 40 }),
    plugin: fc.option(fc.constantFrom("nbp-fx", "ledger", "ecb-fx"), { nil: undefined }),
  });

  /** The summary by its definition, folded from every decision in the log. */
  async function folded(o: { since: number; until: number; buckets: number; plugin: string | undefined }) {
    const width = (o.until - o.since) / o.buckets;
    const buckets = Array.from({ length: o.buckets }, () => ({ allowed: 0, refused: 0 }));
    const dests = new Map<string, [string, number, number, number, number]>();
    const counted: number[] = [];
    for (const e of await store.read({ type: "egress.decision" })) {
      const d = e.data;
      const s = floorSecond(Date.parse(e.time));
      if ((o.plugin !== undefined && d.plugin !== o.plugin) || s < floorSecond(o.since) || s > floorSecond(o.until)) continue;
      const i = Math.min(o.buckets - 1, Math.max(0, Math.floor((s - o.since) / width)));
      const b = buckets[i] as { allowed: number; refused: number };
      if (d.allowed) b.allowed += 1;
      else b.refused += 1;
      const key = `${d.plugin} ${d.host.toLowerCase()} ${d.port}`;
      const t = dests.get(key) ?? [d.plugin, d.port, 0, 0, 0];
      t[d.allowed ? 2 : 3] += 1;
      t[4] = e.seq;
      dests.set(key, t);
      counted.push(e.seq);
    }
    return { buckets: buckets.map((b) => [b.allowed, b.refused]), dests: [...dests].map(([k, t]) => [k, t[2], t[3], t[4]]).sort(), recent: counted.reverse().slice(0, 20) };
  }

  it("equals the summary folded from every decision, whatever the windows asked and whenever the counts caught up", async () => {
    await fc.assert(fc.asyncProperty(fc.array(fc.array(made, { minLength: 1, maxLength: 15 }), { minLength: 1, maxLength: 6 }), fc.array(window, { minLength: 1, maxLength: 3 }), async (rounds, windows) => {
      const base = await store.head();
      for (const batch of rounds) {
        for (const m of batch) await decide(m.plugin, m.host, m.allowed, m.at, m.port);
        // Ask between the batches too: the counts then catch up a part of the log at a time.
        const w = windows[0] as (typeof windows)[number];
        await egressSummary(store, { since: new Date(T0 + w.since), until: new Date(T0 + w.since + w.length), buckets: w.buckets });
      }
      for (const w of windows) {
        const o = { since: T0 + w.since, until: T0 + w.since + w.length, buckets: w.buckets, plugin: w.plugin };
        const s = await egressSummary(store, { since: new Date(o.since), until: new Date(o.until), buckets: o.buckets, ...(o.plugin === undefined ? {} : { plugin: o.plugin }) });
        const want = await folded(o);
        expect(s.buckets.map((b) => [b.allowed, b.refused])).toEqual(want.buckets);
        expect(s.plugins.flatMap((p) => p.destinations.map((d) => [`${p.plugin} ${d.host} ${d.port}`, d.allowed, d.refused, d.last.seq])).sort()).toEqual(want.dests);
        expect(s.recent.map((r) => r.seq)).toEqual(want.recent);
        expect([s.allowed, s.refused]).toEqual(want.buckets.reduce((t, [x, y]) => [(t[0] ?? 0) + (x ?? 0), (t[1] ?? 0) + (y ?? 0)], [0, 0]));
      }
      expect(await store.head()).toBeGreaterThan(base);
    }), { numRuns: 40 });
  });
});
