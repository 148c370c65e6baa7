/** Egress decisions as an owner reads them: filtered pages, and counts by destination and over time. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openStore } from "../events/index.js";
import type { EventStore } from "../events/index.js";
import { egressDecisions, egressSummary } from "./egress-view.js";

let dir: string;
let store: EventStore;
let now = Date.parse("2026-12-01T00:00:00Z");

function decide(plugin: string, host: string, allowed: boolean, at: number) {
  now = at;
  store.append([{ stream: `egress/${plugin}`, type: "egress.decision", actor: "egress", data: { plugin, host, port: 443, allowed, reason: allowed ? "listed" : "not_listed" } }]);
}

const H = 3_600_000;
const T0 = Date.parse("2026-12-01T00:00:00Z");

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "openfief-egress-view-"));
  store = await openStore({ file: join(dir, "log.db"), clock: () => new Date(now) });
  decide("nbp-fx", "api.nbp.pl", true, T0 + 0.5 * H); // seq 1
  decide("nbp-fx", "api.nbp.pl", true, T0 + 1.5 * H); // 2
  decide("nbp-fx", "static.nbp.pl", false, T0 + 1.6 * H); // 3
  decide("ledger", "Telemetry.Example", false, T0 + 2.5 * H); // 4
  decide("nbp-fx", "API.nbp.pl", true, T0 + 3.5 * H); // 5
  store.append([{ stream: "plugin/nbp-fx", type: "grant.deleted", actor: "owner:cli", data: { name: "nbp-fx" } }]); // 6
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
  ])("%s", (_what, q, seqs, next) => {
    const page = egressDecisions(store, q);
    expect(page.decisions.map((d) => d.seq)).toEqual(seqs);
    expect(page.next).toBe(next);
  });

  it("refuses a host filter no host could match", () => {
    expect(() => egressDecisions(store, { host: "x".repeat(254) })).toThrow(/host must be 1 to 253/);
  });
});

describe("a summary of a window", () => {
  it("counts each plugin's destinations (host names without case), refused ones first", () => {
    const s = egressSummary(store, { since: new Date(T0), until: new Date(T0 + 4 * H), buckets: 4 });
    expect([s.allowed, s.refused, s.truncated]).toEqual([3, 2, false]);
    expect(s.plugins.map((p) => [p.plugin, p.destinations.map((d) => [d.host, d.allowed, d.refused])])).toEqual([
      ["ledger", [["telemetry.example", 0, 1]]],
      ["nbp-fx", [["static.nbp.pl", 0, 1], ["api.nbp.pl", 3, 0]]],
    ]);
    expect(s.recent.map((r) => r.seq)).toEqual([5, 4, 3, 2, 1]);
  });

  it("cuts the window into equal buckets", () => {
    const s = egressSummary(store, { since: new Date(T0), until: new Date(T0 + 4 * H), buckets: 4 });
    expect(s.buckets.map((b) => [b.allowed, b.refused])).toEqual([[1, 0], [1, 1], [0, 1], [1, 0]]);
    expect(s.buckets[1]?.start).toBe("2026-12-01T01:00:00.000Z");
  });

  it("counts only what falls in the window", () => {
    const s = egressSummary(store, { since: new Date(T0 + H), until: new Date(T0 + 2 * H), plugin: "nbp-fx", buckets: 1 });
    expect([s.allowed, s.refused]).toEqual([1, 1]);
  });

  it("keeps a granted host that did not resolve apart from one refused by policy", () => {
    now = T0 + 3.6 * H;
    store.append([{ stream: "egress/nbp-fx", type: "egress.decision", actor: "egress", data: { plugin: "nbp-fx", host: "api.nbp.pl", port: 443, allowed: false, reason: "dns_nxdomain", addresses: [] } }]); // 7
    const s = egressSummary(store, { since: new Date(T0), until: new Date(T0 + 4 * H), buckets: 4 });
    expect([s.allowed, s.refused, s.failed]).toEqual([3, 2, 1]);
    const nbp = s.plugins.find((p) => p.plugin === "nbp-fx");
    expect([nbp?.allowed, nbp?.refused, nbp?.failed]).toEqual([3, 1, 1]);
    expect(nbp?.destinations.map((d) => [d.host, d.allowed, d.refused, d.failed])).toEqual([["api.nbp.pl", 3, 0, 1], ["static.nbp.pl", 0, 1, 0]]);
    expect(s.buckets.map((b) => [b.allowed, b.refused, b.failed])).toEqual([[1, 0, 0], [1, 1, 0], [0, 1, 0], [1, 0, 1]]);
    expect(s.recent[0]).toMatchObject({ seq: 7, outcome: "failed", reason: "dns_nxdomain" });
    expect(egressDecisions(store, { outcome: "failed" }).decisions.map((d) => d.seq)).toEqual([7]);
    expect(egressDecisions(store, { outcome: "refused" }).decisions.map((d) => d.seq)).toEqual([3, 4]);
  });

  it.each<[string, Parameters<typeof egressSummary>[1], RegExp]>([
    ["refuses a window that ends before it starts", { since: new Date(T0), until: new Date(T0) }, /must end after it starts/],
    ["refuses too many buckets", { since: new Date(T0), until: new Date(T0 + H), buckets: 201 }, /buckets must be/],
  ])("%s", (_what, o, message) => {
    expect(() => egressSummary(store, o)).toThrow(message);
  });
});
