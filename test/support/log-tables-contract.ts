/**
 * The tables beside the log, as part of the event log's contract (event-log-contract.ts runs it
 * for every store): projections' rows and checkpoints, egress counts, the incremental decision
 * check and module bytes. A log that keeps no tables (the SQLite stand-in of
 * test/support/sqlite-event-log.ts) skips these tests.
 */
import { describe, expect, it } from "vitest";
import type { TestContext } from "vitest";
import { EGRESS_FAILURE_CODES } from "../../src/events/catalog/egress-events.js";
import type { KnownEvent } from "../../src/events/catalog.js";
import type { EventLog } from "../../src/events/port.js";
import type { EgressCountRow, EgressCountTable, EgressDecisionFacts, LogTables, ProjectionTableSpec } from "../../src/events/tables.js";
import type { NewEvent } from "../../src/events/types.js";
import { pluginObserved, steppingClock } from "../events/helpers.js";

type Open = (opts?: { clock?: () => Date }) => Promise<EventLog>;
type Reopen = (log: EventLog) => Promise<EventLog>;

/** The log's tables, or the test skipped when it keeps none. */
function tablesOf(log: EventLog, ctx: TestContext): LogTables {
  const tables = log.tables as LogTables | undefined;
  if (tables === undefined) ctx.skip("this log keeps no tables beside it");
  return tables;
}

const IMAGES: ProjectionTableSpec = { name: "t_images", version: 1, table: "t_images", columns: [{ name: "image", type: "TEXT" }, { name: "count", type: "INTEGER" }] };
const GRANTS: ProjectionTableSpec = { name: "t_grants", version: 1, table: "t_grants", columns: [{ name: "spec", type: "TEXT" }] };

const decision = (plugin: string, host: string, allowed: boolean, reason = allowed ? "listed" : "not_listed", port = 443): NewEvent => ({
  stream: `egress/${plugin}`, type: "egress.decision", actor: "egress", data: { plugin, host, port, allowed, reason, rules: 1 },
});

const UNITS = [1_000, 60_000, 3_600_000, 86_400_000];

/** Decisions counted per unit, plugin and destination (what the egress counts projection adds). */
function tally(facts: readonly EgressDecisionFacts[]): EgressCountRow[] {
  const out = new Map<string, { -readonly [K in keyof EgressCountRow]: EgressCountRow[K] }>();
  for (const f of facts) {
    const host = f.host.toLowerCase();
    UNITS.forEach((unit, level) => {
      const start = Math.floor(Date.parse(f.time) / unit) * unit;
      const key = `${level} ${start} ${f.plugin} ${host} ${f.port}`;
      const row = out.get(key) ?? { level, start, plugin: f.plugin, host, port: f.port, allowed: 0, refused: 0, failed: 0, lastSeq: 0 };
      if (f.allowed) row.allowed++;
      else if (EGRESS_FAILURE_CODES.has(f.reason)) row.failed++;
      else row.refused++;
      row.lastSeq = f.seq;
      out.set(key, row);
    });
  }
  return [...out.values()];
}

/** Counts every decision after the checkpoint in steps, as a process catching up does; reads on where another left off. */
async function catchUp(counts: EgressCountTable, head: number, step: number): Promise<void> {
  for (let from = await counts.checkpoint(); from < head;) {
    const to = Math.min(head, from + step);
    if (await counts.add(from, to, tally(await counts.decisions(from, to)))) from = to;
    else from = await counts.checkpoint();
  }
}

const sum = (rows: readonly EgressCountRow[], f: (r: EgressCountRow) => number): number => rows.reduce((s, r) => s + f(r), 0);

const DIGEST = "c".repeat(64);
const installed = (digest: string, size: number): NewEvent => ({ stream: "system", type: "module.installed", actor: "owner:cli", data: { digest, size } });
const uninstalled = (digest: string): NewEvent => ({ stream: "system", type: "module.uninstalled", actor: "owner:cli", data: { digest } });
const moduleOf = (digest: string, bytes: Uint8Array) => ({ digest, size: bytes.length, installedAt: "2026-01-01T00:00:00.000Z", manifest: '{"name":"echo"}', bytes });

/** The tables' part of the contract, on logs that `open` and `reopen` give (closed by the caller's suite). */
export function describeLogTables(open: Open, reopen: Reopen): void {
  describe("the tables beside the log", () => {
    it("refuse to be read or written once the log is closed", async (ctx) => {
      const log = await open();
      const t = tablesOf(log, ctx);
      await log.close();
      const code = async (p: Promise<unknown>): Promise<unknown> => p.then(() => "no error", (err: unknown) => (err as { code?: unknown }).code);
      expect(await Promise.all([
        code(t.projections.checkpoints(["t_images"])), code(t.projections.open([IMAGES])),
        code(t.egressCounts.checkpoint()), code(t.egressCounts.add(0, 1, [])),
        code(t.decisionCheck.load()), code(t.modules.list()), code(t.modules.install(moduleOf(DIGEST, new Uint8Array([1])), installed(DIGEST, 1))),
      ])).toEqual(Array(7).fill("closed"));
    });

    describe("projections", () => {
      it("open empty at checkpoint 0, commit rows with their checkpoint in one step, and read back in key order", async (ctx) => {
        const log = await open();
        const t = tablesOf(log, ctx).projections;
        await t.open([IMAGES, GRANTS]);
        expect(await t.checkpoints(["t_images", "t_grants", "t_none"])).toEqual(new Map([["t_images", 0], ["t_grants", 0], ["t_none", 0]]));
        expect(await t.rows(IMAGES)).toEqual([]);
        await t.commit([{ spec: IMAGES, upserts: [["b", ["x", 2]], ["a", [null, 1]]], deletes: [] }, { spec: GRANTS, upserts: [], deletes: [] }], 7);
        expect(await t.checkpoints(["t_images", "t_grants"])).toEqual(new Map([["t_images", 7], ["t_grants", 7]]));
        expect(await t.rows(IMAGES)).toEqual([["a", [null, 1]], ["b", ["x", 2]]]);
        // Keys order by their bytes, as both stores compare them.
        await t.commit([{ spec: IMAGES, upserts: [["é", ["quote ' \" and \\", -3]], ["Z", ["z", 0]], ["b", ["y", 3]]], deletes: ["a", "never"] }], 9);
        expect(await t.rows(IMAGES)).toEqual([["Z", ["z", 0]], ["b", ["y", 3]], ["é", ["quote ' \" and \\", -3]]]);
        expect(await t.checkpoints(["t_images", "t_grants"])).toEqual(new Map([["t_images", 9], ["t_grants", 7]]));
        // Another handle (another process) reads what was committed.
        const other = tablesOf(await reopen(log), ctx).projections;
        await other.open([IMAGES, GRANTS]);
        expect(await other.rows(IMAGES)).toEqual(await t.rows(IMAGES));
        expect((await other.checkpoints(["t_images"])).get("t_images")).toBe(9);
      });

      it("commit upserts and deletes thousands of rows at once", async (ctx) => {
        const log = await open();
        const t = tablesOf(log, ctx).projections;
        await t.open([IMAGES]);
        const keys = Array.from({ length: 12_000 }, (_, i) => `k${String(i).padStart(5, "0")}`);
        await t.commit([{ spec: IMAGES, upserts: keys.map((k, i) => [k, [`image ${i}`, i]] as const), deletes: [] }], 3);
        await t.commit([{ spec: IMAGES, upserts: keys.slice(0, 6_000).map((k, i) => [k, [null, -i]] as const), deletes: keys.slice(6_000, 11_000) }], 4);
        const rows = await t.rows(IMAGES);
        expect(rows).toHaveLength(7_000);
        expect(rows[5_999]).toEqual(["k05999", [null, -5_999]]);
        expect(rows[6_000]).toEqual(["k11000", ["image 11000", 11_000]]);
      });

      it("reset empties the tables named and sets their checkpoints to 0, leaving the others", async (ctx) => {
        const log = await open();
        const t = tablesOf(log, ctx).projections;
        await t.open([IMAGES, GRANTS]);
        await t.commit([{ spec: IMAGES, upserts: [["a", ["x", 1]]], deletes: [] }, { spec: GRANTS, upserts: [["g", ["{}"]]], deletes: [] }], 5);
        await t.reset([IMAGES]);
        expect(await t.rows(IMAGES)).toEqual([]);
        expect(await t.rows(GRANTS)).toEqual([["g", ["{}"]]]);
        expect(await t.checkpoints(["t_images", "t_grants"])).toEqual(new Map([["t_images", 0], ["t_grants", 5]]));
      });

      it("a new version empties the table and sets its checkpoint to 0; the same version keeps both", async (ctx) => {
        const log = await open();
        const t = tablesOf(log, ctx).projections;
        await t.open([IMAGES, GRANTS]);
        await t.commit([{ spec: IMAGES, upserts: [["a", ["x", 1]]], deletes: [] }, { spec: GRANTS, upserts: [["g", ["{}"]]], deletes: [] }], 5);
        const v2: ProjectionTableSpec = { ...IMAGES, version: 2, columns: [{ name: "image", type: "TEXT" }] };
        const upgraded = tablesOf(await reopen(log), ctx).projections;
        await upgraded.open([v2, GRANTS]);
        expect(await upgraded.rows(v2)).toEqual([]);
        expect(await upgraded.checkpoints(["t_images", "t_grants"])).toEqual(new Map([["t_images", 0], ["t_grants", 5]]));
        await upgraded.commit([{ spec: v2, upserts: [["a", ["y"]]], deletes: [] }], 6);
        await upgraded.open([v2, GRANTS]);
        expect(await upgraded.rows(v2)).toEqual([["a", ["y"]]]);
        expect(await upgraded.rows(GRANTS)).toEqual([["g", ["{}"]]]);
      });

      it.for([
        ["a table name with a capital", { ...IMAGES, table: "T_images" }],
        ["a table name that is SQL", { ...IMAGES, table: "t; DROP TABLE events" }],
        ["a column name with a dash", { ...IMAGES, columns: [{ name: "im-age", type: "TEXT" }] }],
        ["a column name starting with a digit", { ...IMAGES, columns: [{ name: "1st", type: "TEXT" }] }],
      ] as const)("refuses a spec with %s before it reaches SQL, writing nothing", async ([, bad], ctx) => {
        const log = await open();
        const t = tablesOf(log, ctx).projections;
        const spec = bad as ProjectionTableSpec;
        await expect(t.open([spec])).rejects.toThrow(/not a table or column name/);
        await expect(t.rows(spec)).rejects.toThrow(/not a table or column name/);
        await expect(t.commit([{ spec, upserts: [["a", ["x", 1]]], deletes: [] }], 3)).rejects.toThrow(/not a table or column name/);
        expect((await t.checkpoints([spec.name])).get(spec.name)).toBe(0);
      });

      it("refuses a row whose cells its columns' types refuse, writing nothing of the commit", async (ctx) => {
        const log = await open();
        const t = tablesOf(log, ctx).projections;
        await t.open([IMAGES, GRANTS]);
        const commit = t.commit([{ spec: GRANTS, upserts: [["g", ["{}"]]], deletes: [] }, { spec: IMAGES, upserts: [["a", ["x", "not a number"]]], deletes: [] }], 4);
        await expect(commit).rejects.toThrow();
        expect(await t.rows(GRANTS)).toEqual([]);
        expect(await t.checkpoints(["t_images", "t_grants"])).toEqual(new Map([["t_images", 0], ["t_grants", 0]]));
      });
    });

    describe("egress counts", () => {
      it("read only the decisions' facts: seq, time, plugin, host as written, port, outcome and reason", async (ctx) => {
        const log = await open({ clock: steppingClock(Date.parse("2026-01-01T00:00:00Z")) });
        const counts = tablesOf(log, ctx).egressCounts;
        await log.append([decision("a", "API.Example.com", true), pluginObserved("a"), decision("b", "x.example", false, "dns_nxdomain", 8443)]);
        await log.append([decision("a", "api.example.com", false)]);
        expect(await counts.decisions(0, 4)).toEqual([
          { seq: 1, time: "2026-01-01T00:00:00.000Z", plugin: "a", host: "API.Example.com", port: 443, allowed: true, reason: "listed" },
          { seq: 3, time: "2026-01-01T00:00:00.000Z", plugin: "b", host: "x.example", port: 8443, allowed: false, reason: "dns_nxdomain" },
          { seq: 4, time: "2026-01-01T00:00:01.000Z", plugin: "a", host: "api.example.com", port: 443, allowed: false, reason: "not_listed" },
        ]);
        expect((await counts.decisions(1, 3)).map((f) => f.seq)).toEqual([3]);
      });

      it("add rows with the checkpoint, summing allowed, refused and failed and keeping the latest seq; read by level, span and plugin", async (ctx) => {
        const log = await open();
        const counts = tablesOf(log, ctx).egressCounts;
        await counts.open(1);
        expect(await counts.checkpoint()).toBe(0);
        /** A row of api.example.com:443: [allowed, refused, failed]. */
        const row = (level: number, start: number, plugin: string, [allowed, refused, failed]: readonly number[], lastSeq: number): EgressCountRow =>
          ({ level, start, plugin, host: "api.example.com", port: 443, allowed: allowed ?? 0, refused: refused ?? 0, failed: failed ?? 0, lastSeq });
        expect(await counts.add(0, 5, [row(0, 1_000, "a", [1, 2, 0], 4), row(0, 2_000, "b", [0, 0, 1], 5), row(1, 0, "a", [1, 2, 0], 4), row(1, 0, "b", [0, 0, 1], 5)])).toBe(true);
        expect(await counts.checkpoint()).toBe(5);
        // Two rows of one destination and unit in one add are both counted.
        expect(await counts.add(5, 8, [row(0, 1_000, "a", [2, 0, 1], 8), row(1, 0, "a", [3, 0, 1], 8), row(0, 1_000, "a", [1, 0, 0], 7)])).toBe(true);
        expect(await counts.rows(0, 0, 10_000)).toEqual([row(0, 1_000, "a", [4, 2, 1], 8), row(0, 2_000, "b", [0, 0, 1], 5)]);
        expect(await counts.rows(0, 1_500, 10_000)).toEqual([row(0, 2_000, "b", [0, 0, 1], 5)]);
        expect(await counts.rows(1, 0, 60_000, "a")).toEqual([row(1, 0, "a", [4, 2, 1], 8)]);
        expect(await counts.rows(1, 0, 60_000, "c")).toEqual([]);
        expect(await counts.rows(2, 0, 60_000)).toEqual([]);
      });

      it("refuse to add from a checkpoint that moved, adding nothing", async (ctx) => {
        const log = await open();
        const counts = tablesOf(log, ctx).egressCounts;
        await counts.open(1);
        const row: EgressCountRow = { level: 0, start: 0, plugin: "a", host: "h", port: 1, allowed: 1, refused: 0, failed: 0, lastSeq: 3 };
        expect(await counts.add(0, 3, [row])).toBe(true);
        expect(await counts.add(0, 6, [row])).toBe(false);
        expect(await counts.add(2, 6, [row])).toBe(false);
        expect(await counts.checkpoint()).toBe(3);
        expect(await counts.rows(0, 0, 1_000)).toEqual([row]);
      });

      it("a new version empties the counts and sets the checkpoint to 0; reset does so at the version opened", async (ctx) => {
        const log = await open();
        const counts = tablesOf(log, ctx).egressCounts;
        await counts.open(1);
        const row: EgressCountRow = { level: 0, start: 0, plugin: "a", host: "h", port: 1, allowed: 1, refused: 0, failed: 0, lastSeq: 3 };
        await counts.add(0, 3, [row]);
        await counts.open(1);
        expect([await counts.checkpoint(), (await counts.rows(0, 0, 1_000)).length]).toEqual([3, 1]);
        const upgraded = tablesOf(await reopen(log), ctx).egressCounts;
        await upgraded.open(2);
        expect([await upgraded.checkpoint(), (await upgraded.rows(0, 0, 1_000)).length]).toEqual([0, 0]);
        await upgraded.add(0, 3, [row]);
        await upgraded.reset();
        expect([await upgraded.checkpoint(), (await upgraded.rows(0, 0, 1_000)).length]).toEqual([0, 0]);
        // The reset kept version 2: opening at 2 again keeps what is counted after it.
        await upgraded.add(0, 3, [row]);
        await upgraded.open(2);
        expect(await upgraded.checkpoint()).toBe(3);
      });

      it("two logs on one database adding at once never count a decision twice", async (ctx) => {
        const a = await open({ clock: steppingClock(Date.parse("2026-01-01T00:00:00Z")) });
        const b = await reopen(a);
        const ca = tablesOf(a, ctx).egressCounts;
        const cb = tablesOf(b, ctx).egressCounts;
        await Promise.all([ca.open(1), cb.open(1)]);
        const reasons = ["listed", "not_listed", "dns_nxdomain", "connect_timeout"];
        for (let i = 0; i < 20; i++) {
          await a.append(Array.from({ length: 30 }, (_, j) => decision(`p${j % 3}`, j % 2 === 0 ? "API.example.com" : "other.example", (i + j) % 4 === 0, reasons[(i + j) % 4])));
        }
        const head = await a.head();
        const facts = await ca.decisions(0, head);
        expect(facts).toHaveLength(600);
        // Both race for the same first step: exactly one adds it.
        const first = tally(await ca.decisions(0, 50));
        expect((await Promise.all([ca.add(0, 50, first), cb.add(0, 50, first)])).sort()).toEqual([false, true]);
        // Then both catch up at once, in steps of different sizes, each reading on where the other left off.
        await Promise.all([catchUp(ca, head, 37), catchUp(cb, head, 53), catchUp(ca, head, 11)]);
        expect(await cb.checkpoint()).toBe(head);
        const want = tally(facts);
        for (let level = 0; level < UNITS.length; level++) {
          const got = await ca.rows(level, 0, Number.MAX_SAFE_INTEGER);
          const expected = want.filter((r) => r.level === level);
          expect([sum(got, (r) => r.allowed), sum(got, (r) => r.refused), sum(got, (r) => r.failed)]).toEqual([150, 150, 300]);
          expect(new Set(got.map((r) => JSON.stringify(r)))).toEqual(new Set(expected.map((r) => JSON.stringify(r))));
        }
      });
    });

    describe("the decision check", () => {
      const totals = (checked: number) => ({ checked, diverged: 1, more: 0, listsKnown: true, divergences: [{ seq: 3, what: "egress", detail: { a: [1, "é"] } }] });

      it("saves totals and lists with the checkpoint, loads them back, and refuses a save from a checkpoint that moved", async (ctx) => {
        const log = await open();
        const check = tablesOf(log, ctx).decisionCheck;
        await check.open(1);
        expect(await check.checkpoint()).toBe(0);
        expect(await check.load()).toEqual({ totals: null, lists: new Map() });
        const lists = new Map([["echo", { current: { entries: ["a:443"] }, changed: true, previous: null }], ["ping", { current: null, changed: false, previous: [1, 2] }]]);
        expect(await check.save(0, 10, totals(4), lists)).toBe(true);
        expect(await check.checkpoint()).toBe(10);
        expect(await check.load()).toEqual({ totals: totals(4), lists });
        // Lists not named are kept; those named are replaced.
        expect(await check.save(10, 12, totals(5), new Map([["echo", { current: null, changed: false, previous: { entries: [] } }]]))).toBe(true);
        const loaded = await check.load();
        expect([loaded.totals?.checked, loaded.lists.get("echo"), loaded.lists.get("ping")]).toEqual([5, { current: null, changed: false, previous: { entries: [] } }, lists.get("ping")]);
        expect(await check.save(10, 14, totals(9), new Map([["new", { current: null, changed: true, previous: null }]]))).toBe(false);
        expect(await check.checkpoint()).toBe(12);
        expect((await check.load()).totals?.checked).toBe(5);
        expect((await check.load()).lists.has("new")).toBe(false);
      });

      it("reset and a new version forget what was found and set the checkpoint to 0", async (ctx) => {
        const log = await open();
        const check = tablesOf(log, ctx).decisionCheck;
        await check.open(1);
        await check.save(0, 10, totals(4), new Map([["echo", { current: null, changed: true, previous: null }]]));
        await check.reset();
        expect([await check.checkpoint(), await check.load()]).toEqual([0, { totals: null, lists: new Map() }]);
        await check.save(0, 10, totals(4), new Map());
        await check.open(1);
        expect(await check.checkpoint()).toBe(10);
        const upgraded = tablesOf(await reopen(log), ctx).decisionCheck;
        await upgraded.open(2);
        expect([await upgraded.checkpoint(), await upgraded.load()]).toEqual([0, { totals: null, lists: new Map() }]);
      });
    });

    describe("modules", () => {
      it("install a module and append its event in one step; a second install of the digest does neither", async (ctx) => {
        const log = await open();
        const modules = tablesOf(log, ctx).modules;
        const heard: KnownEvent[] = [];
        log.subscribe((events) => heard.push(...events));
        await log.append([pluginObserved("echo")]);
        const bytes = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 255]);
        const e = await modules.install(moduleOf(DIGEST, bytes), installed(DIGEST, bytes.length));
        expect([e?.seq, e?.type, e?.stream]).toEqual([2, "module.installed", "system"]);
        expect(await modules.get(DIGEST)).toEqual({ digest: DIGEST, size: 9, installedAt: "2026-01-01T00:00:00.000Z", manifest: '{"name":"echo"}' });
        expect(await modules.bytes(DIGEST)).toEqual(bytes);
        expect(await modules.install(moduleOf(DIGEST, new Uint8Array([1])), installed(DIGEST, 1))).toBeNull();
        expect(await modules.bytes(DIGEST)).toEqual(bytes);
        expect(await log.head()).toBe(2);
        await expect.poll(() => heard.map((x) => x.seq)).toEqual([1, 2]);
        expect(await log.verify()).toEqual({ ok: true, count: 2 });
      });

      it("list modules by install time then digest, and uninstall one with its event, once", async (ctx) => {
        const log = await open();
        const modules = tablesOf(log, ctx).modules;
        const other = "a".repeat(64);
        await modules.install({ ...moduleOf(DIGEST, new Uint8Array([1, 2])), installedAt: "2026-01-02T00:00:00.000Z" }, installed(DIGEST, 2));
        await modules.install(moduleOf(other, new Uint8Array([3])), installed(other, 1));
        expect((await modules.list()).map((m) => [m.digest, m.size])).toEqual([[other, 1], [DIGEST, 2]]);
        const e = await modules.uninstall(DIGEST, uninstalled(DIGEST));
        expect([e?.seq, e?.type]).toEqual([3, "module.uninstalled"]);
        expect([await modules.get(DIGEST), await modules.bytes(DIGEST)]).toEqual([undefined, undefined]);
        expect(await modules.uninstall(DIGEST, uninstalled(DIGEST))).toBeNull();
        expect((await modules.list()).map((m) => m.digest)).toEqual([other]);
        expect(await log.head()).toBe(3);
      });

      it("store no module when the log refuses its event, and append no event when the module's row is refused", async (ctx) => {
        const log = await open();
        const modules = tablesOf(log, ctx).modules;
        const bad: NewEvent = { ...installed(DIGEST, 1), data: { digest: DIGEST } };
        await expect(modules.install(moduleOf(DIGEST, new Uint8Array([1])), bad)).rejects.toThrow();
        expect(await modules.get(DIGEST)).toBeUndefined();
        // A digest the table's check refuses (not 64 lower-case hex digits), under an event the log would take.
        await expect(modules.install(moduleOf("NOT-A-DIGEST", new Uint8Array([1])), installed(DIGEST, 1))).rejects.toThrow();
        expect([await log.head(), await modules.list()]).toEqual([0, []]);
        await log.append([pluginObserved("echo")]);
        expect(await log.verify()).toEqual({ ok: true, count: 1 });
      });
    });
  });
}
