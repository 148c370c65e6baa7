/**
 * The event log's contract: one suite every store runs (Emmett's feature suite, in this project's
 * words). A store is given as a {@link LogFixture}: how to open a new, empty log, another handle
 * on it, and how to reach its database directly (as the application could, and as whoever owns
 * the schema could) for the tests of what the database itself refuses.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { canonicalJson } from "../../src/events/canonical.js";
import type { RawEventRow } from "../../src/events/chain.js";
import { StoreError } from "../../src/events/errors.js";
import { chainHash, GENESIS_HASH } from "../../src/events/hash.js";
import type { EventLog } from "../../src/events/port.js";
import { EventRegistry } from "../../src/events/registry.js";
import type { KnownEvent } from "../../src/events/catalog.js";
import type { NewEvent } from "../../src/events/types.js";
import { describeLogTables } from "./log-tables-contract.js";
import { describeDeliveryTable } from "./delivery-table-contract.js";
import { describeLogTree } from "./log-tree-contract.js";
import { configVerdict, DIGEST_A, DIGEST_B, egressDecision, grantObserved, IMAGE_A, IMAGE_B, pluginObserved, steppingClock, verdict } from "../events/helpers.js";

/** How the suite opens logs of one store. */
export interface LogFixture {
  setUp?(): Promise<void>;
  tearDown?(): Promise<void>;
  /** A new, empty log. */
  open(opts?: { clock?: () => Date; registry?: EventRegistry }): Promise<EventLog>;
  /** Another handle on the same log as `log` (another connection, as another process opens it). */
  reopen(log: EventLog, opts?: { clock?: () => Date; registry?: EventRegistry }): Promise<EventLog>;
  /** Runs a statement on the log's database as the application's connection could; rejects with the database's refusal. */
  exec(log: EventLog, sql: string): Promise<void>;
  /** Runs a statement as whoever owns the schema (an operator editing by hand). */
  asOwner(log: EventLog, sql: string): Promise<void>;
  /** The statement that drops one of the guards. */
  dropGuardSql(name: string): string;
  /** The guards this store keeps. */
  readonly guards: readonly string[];
}

/** Every row of a log as kept. */
export async function rawRows(log: EventLog, pageSize = 1000): Promise<RawEventRow[]> {
  const out: RawEventRow[] = [];
  for await (const rows of log.rawPages({ pageSize })) out.push(...rows);
  return out;
}

/** Waits until `check` holds (listeners are told asynchronously on some stores). */
export async function until(check: () => boolean, ms = 5_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error("timed out waiting");
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    return err instanceof StoreError ? err.code : `not a StoreError: ${String(err)}`;
  }
  return "no error";
}

/** A registry holding `test.note`, version 1 (`{text}`), or version 2 (`{text, words}`) that lifts version 1. */
export function noteRegistry(version: 1 | 2): EventRegistry {
  const r = new EventRegistry();
  const v1 = { type: "object", required: ["text"], properties: { text: { type: "string" } }, additionalProperties: false };
  const v2 = { type: "object", required: ["text", "words"], properties: { text: { type: "string" }, words: { type: "integer" } }, additionalProperties: false };
  r.define({
    type: "test.note", version, schema: version === 1 ? v1 : v2, observeWith: [],
    stream: (s) => (s === "system" ? null : "must be in the system stream"),
    ...(version === 2 ? { history: [{ version: 1, schema: v1, upcast: (d: unknown) => ({ ...(d as { text: string }), words: (d as { text: string }).text.split(" ").length }) }] } : {}),
  });
  return r;
}

const egressTo = (plugin: string, host: string, allowed: boolean): NewEvent => ({
  stream: `egress/${plugin}`, type: "egress.decision", actor: "egress", data: { plugin, host, port: 443, allowed, reason: allowed ? "listed" : "not_listed", rules: 1 },
});

/** The contract suite, against the store `fixture` opens. */
export function describeEventLog(name: string, fixture: LogFixture): void {
  describe(`the event log on ${name}`, () => {
    const opened: EventLog[] = [];
    const open = async (opts?: { clock?: () => Date; registry?: EventRegistry }): Promise<EventLog> => {
      const log = await fixture.open({ clock: steppingClock(), ...opts });
      opened.push(log);
      return log;
    };
    const reopen = async (log: EventLog, opts?: { clock?: () => Date; registry?: EventRegistry }): Promise<EventLog> => {
      const other = await fixture.reopen(log, opts);
      opened.push(other);
      return other;
    };
    beforeAll(async () => { await fixture.setUp?.(); });
    afterEach(async () => { for (const l of opened.splice(0)) await l.close(); });
    afterAll(async () => { await fixture.tearDown?.(); });

    describe("appending", () => {
      it("gives seqs from 1 without a gap, versions per stream, and returns what it stored", async () => {
        const log = await open();
        const a = await log.append([pluginObserved("echo"), egressDecision("echo"), grantObserved("echo")]);
        const b = await log.append([egressDecision("echo")]);
        expect([...a, ...b].map((e) => [e.seq, e.stream, e.version])).toEqual([
          [1, "plugin/echo", 1], [2, "egress/echo", 1], [3, "plugin/echo", 2], [4, "egress/echo", 2],
        ]);
        expect(await log.read()).toEqual([...a, ...b]);
        expect(await log.head()).toBe(4);
        expect(await log.version("plugin/echo")).toBe(2);
        expect(await log.version("plugin/none")).toBe(0);
      });

      it.each([
        ["an unknown type", { stream: "plugin/echo", type: "no.such", actor: "a", data: {} }, "unknown_type"],
        ["data its schema refuses", { stream: "plugin/echo", type: "plugin.observed", actor: "a", data: { name: 3 } }, "invalid_data"],
        ["an invalid stream name", { stream: "Plugin/ECHO", type: "plugin.observed", actor: "a", data: { name: "echo", spec: {} } }, "invalid_stream"],
        ["an empty actor", { stream: "plugin/echo", type: "plugin.observed", actor: "", data: { name: "echo", spec: {} } }, "invalid_event"],
        ["a cause that is not an earlier event", { ...pluginObserved("echo"), causedBy: 99 }, "invalid_cause"],
      ])("refuses a whole batch holding %s, writing nothing", async (_what, bad, code) => {
        const log = await open();
        await log.append([pluginObserved("first")]);
        expect(await codeOf(log.append([pluginObserved("echo"), bad as NewEvent]))).toBe(code);
        expect(await log.head()).toBe(1);
        expect((await log.verify()).ok).toBe(true);
      });

      it("stores data in canonical form and hashes the canonical bytes with the chain's function", async () => {
        const log = await open();
        const data = { spec: { z: 1, a: [true, null, "é\u2028"], m: { b: 2, a: 1 } }, name: "echo" };
        await log.append([{ stream: "plugin/echo", type: "plugin.observed", actor: "cluster", data }, egressDecision("echo")]);
        const rows = await rawRows(log);
        expect(rows[0]?.data).toBe(canonicalJson(data));
        expect(rows[0]?.data).toBe('{"name":"echo","spec":{"a":[true,null,"é\u2028"],"m":{"a":1,"b":2},"z":1}}');
        let prev = GENESIS_HASH;
        for (const r of rows) {
          expect(r.prevHash).toBe(prev);
          expect(r.hash).toBe(chainHash(r.prevHash, r.seq, r.stream, r.version, r.type, r.schemaVersion, r.time, r.actor, r.causedBy, r.data));
          prev = r.hash;
        }
      });

      it("stamps the clock's time, read once per batch", async () => {
        const log = await open({ clock: steppingClock(Date.parse("2026-03-04T05:06:07.089Z")) });
        const events = await log.append([pluginObserved("echo"), egressDecision("echo")]);
        expect(events.map((e) => e.time)).toEqual(["2026-03-04T05:06:07.089Z", "2026-03-04T05:06:07.089Z"]);
      });

      it("appends durably, alone or within durably()", async () => {
        const log = await open();
        await log.append([pluginObserved("echo")], { durable: true });
        const inner = await log.durably(async () => (await log.append([egressDecision("echo")]))[0]?.seq);
        expect(inner).toBe(2);
        const again = await reopen(log);
        expect(await again.head()).toBe(2);
      });

      it("refuses to append once closed", async () => {
        const log = await fixture.open();
        await log.close();
        expect(await codeOf(log.append([pluginObserved("echo")]))).toBe("closed");
      });
    });

    describe("optimistic concurrency per stream", () => {
      it("appends when each expected stream is at the version the caller read, and refuses otherwise", async () => {
        const log = await open();
        await log.append([pluginObserved("echo"), egressDecision("echo")]);
        expect((await log.append([grantObserved("echo")], { expected: { "plugin/echo": 1 } }))[0]?.version).toBe(2);
        let err: unknown;
        try { await log.append([grantObserved("echo")], { expected: { "plugin/echo": 1 } }); } catch (e) { err = e; }
        expect(err).toBeInstanceOf(StoreError);
        expect((err as StoreError).code).toBe("conflict");
        expect((err as StoreError).conflict).toEqual({ stream: "plugin/echo", expected: 1, actual: 2 });
        // A stream the batch does not write is checked too; a new stream is at version 0.
        expect(await codeOf(log.append([grantObserved("echo")], { expected: { "egress/echo": 0 } }))).toBe("conflict");
        expect((await log.append([pluginObserved("ping")], { expected: { "plugin/ping": 0, "egress/echo": 1 } }))[0]?.seq).toBe(4);
      });

      it("checks the version another handle appended, never a copy in memory", async () => {
        const a = await open();
        const b = await reopen(a);
        const seen = await b.version("egress/echo");
        await a.append([egressDecision("echo")]);
        expect(await codeOf(b.append([egressDecision("echo")], { expected: { "egress/echo": seen } }))).toBe("conflict");
        const [e] = await b.append([egressDecision("echo")], { expected: { "egress/echo": 1 } });
        expect([e?.seq, e?.version, e?.prevHash]).toEqual([2, 2, (await a.get(1))?.hash]);
        expect(await a.verify()).toEqual({ ok: true, count: 2 });
      });
    });

    describe("observing", () => {
      it("records an observation only when it differs from the latest of its group", async () => {
        const log = await open();
        expect((await log.observe(pluginObserved("echo")))?.seq).toBe(1);
        expect(await log.observe(pluginObserved("echo"))).toBeNull();
        expect((await log.observe(pluginObserved("echo", IMAGE_B)))?.seq).toBe(2);
        expect((await log.observe({ stream: "plugin/echo", type: "plugin.deleted", actor: "cluster", data: { name: "echo" } }))?.seq).toBe(3);
        // The same spec again after a deletion is news: the group's latest is the deletion.
        expect((await log.observe(pluginObserved("echo", IMAGE_B)))?.seq).toBe(4);
        expect(await log.observe(pluginObserved("echo", IMAGE_B))).toBeNull();
        expect(await log.head()).toBe(4);
      });

      it("compares an older row upcast to the current shape", async () => {
        const v1 = await open({ registry: noteRegistry(1) });
        await v1.append([{ stream: "system", type: "test.note", actor: "a", data: { text: "two words" } }]);
        const v2 = await reopen(v1, { registry: noteRegistry(2) });
        expect(await v2.observe({ stream: "system", type: "test.note", actor: "a", data: { text: "two words", words: 2 } })).toBeNull();
        expect((await v2.observe({ stream: "system", type: "test.note", actor: "a", data: { text: "two words", words: 3 } }))?.seq).toBe(2);
      });
    });

    describe("what the database refuses", () => {
      it.each([
        ["UPDATE", "UPDATE events SET actor = 'mallory' WHERE seq = 1"],
        ["DELETE", "DELETE FROM events WHERE seq = 1"],
      ])("refuses %s of an event, whoever asks", async (_what, sql) => {
        const log = await open();
        await log.append([pluginObserved("echo"), egressDecision("echo")]);
        const before = await rawRows(log);
        await expect(fixture.exec(log, sql)).rejects.toThrow(/append-only/);
        expect(await rawRows(log)).toEqual(before);
      });
    });

    describe("reading", () => {
      it("reads data through the upcasters, leaving the stored row as it was", async () => {
        const v1 = await open({ registry: noteRegistry(1) });
        await v1.append([{ stream: "system", type: "test.note", actor: "a", data: { text: "one two three" } }]);
        const v2 = await reopen(v1, { registry: noteRegistry(2) });
        const [e] = await v2.read();
        expect([e?.schemaVersion, e?.data]).toEqual([1, { text: "one two three", words: 3 }]);
        expect((await rawRows(v2))[0]?.data).toBe('{"text":"one two three"}');
        expect((await v2.get(1))?.data).toEqual({ text: "one two three", words: 3 });
        expect(await v2.verify()).toEqual({ ok: true, count: 1 });
      });

      it("filters by stream, prefix, types, seqs, times and limit", async () => {
        const log = await open({ clock: steppingClock(Date.parse("2026-01-01T00:00:00Z")) });
        for (let i = 0; i < 3; i++) await log.append([pluginObserved(`p${i}`), egressDecision(`p${i}`), grantObserved(`p${i}`), egressDecision("p0")]);
        const seqs = async (f: Parameters<EventLog["read"]>[0]) => (await log.read(f)).map((e) => e.seq);
        expect(await seqs({ stream: "egress/p0" })).toEqual([2, 4, 8, 12]);
        expect(await seqs({ stream: "egress/p0", afterSeq: 2, toSeq: 8 })).toEqual([4, 8]);
        expect(await seqs({ stream: "plugin/p1", type: "grant.observed" })).toEqual([7]);
        expect(await seqs({ streamPrefix: "plugin/", type: ["plugin.observed", "grant.observed"], afterSeq: 3 })).toEqual([5, 7, 9, 11]);
        expect(await seqs({ afterSeq: 4, toSeq: 6 })).toEqual([5, 6]);
        expect(await seqs({ since: new Date("2026-01-01T00:00:01Z"), until: new Date("2026-01-01T00:00:01Z") })).toEqual([5, 6, 7, 8]);
        expect(await seqs({ type: "egress.decision", limit: 2 })).toEqual([2, 4]);
        expect(await seqs({ type: [] })).toEqual([]);
      });

      it("walks pages in seq order, of the types asked, with or without hashes", async () => {
        const log = await open();
        for (let i = 0; i < 5; i++) await log.append([pluginObserved(`p${i}`), egressDecision(`p${i}`), egressDecision(`p${i}`)]);
        const sizes: number[] = [];
        const seqs: number[] = [];
        for await (const page of log.pages({ pageSize: 4, afterSeq: 2, toSeq: 14 })) { sizes.push(page.length); seqs.push(...page.map((e) => e.seq)); }
        expect(sizes).toEqual([4, 4, 4]);
        expect(seqs).toEqual([3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14]);
        const beyond: number[] = [];
        for await (const page of log.pages({ afterSeq: 12, toSeq: Number.MAX_SAFE_INTEGER, pageSize: 2 })) beyond.push(...page.map((e) => e.seq));
        expect(beyond).toEqual([13, 14, 15]);
        const observed: KnownEvent[] = [];
        for await (const page of log.pages({ types: ["plugin.observed"], pageSize: 2, hashes: false })) observed.push(...page);
        expect(observed.map((e) => [e.seq, e.hash, e.prevHash])).toEqual([[1, "", ""], [4, "", ""], [7, "", ""], [10, "", ""], [13, "", ""]]);
        expect((await log.read({ type: "plugin.observed" })).map((e) => ({ ...e, hash: "", prevHash: "" }))).toEqual(observed);
      });

      it("answers last, get, versionsBetween and the head point", async () => {
        const log = await open();
        await log.append([pluginObserved("echo"), egressDecision("echo"), grantObserved("echo"), egressDecision("echo"), egressDecision("echo")]);
        expect((await log.last("plugin/echo"))?.seq).toBe(3);
        expect((await log.last("plugin/echo", "plugin.observed"))?.seq).toBe(1);
        expect((await log.last("egress/echo", "egress.decision"))?.seq).toBe(5);
        expect(await log.last("plugin/none")).toBeNull();
        expect((await log.get(4))?.type).toBe("egress.decision");
        expect(await log.get(6)).toBeNull();
        expect(await log.versionsBetween("egress/echo", 2, 4)).toEqual({ from: 2, to: 2 });
        expect(await log.versionsBetween("egress/echo")).toEqual({ from: 1, to: 3 });
        expect(await log.versionsBetween("egress/echo", 5)).toEqual({ from: 4, to: 3 });
        expect(await log.headPoint()).toEqual({ seq: 5, hash: (await log.get(5))?.hash });
      });

      it("has an empty head point before the first event", async () => {
        const log = await open();
        expect(await log.headPoint()).toEqual({ seq: 0, hash: GENESIS_HASH });
        expect(await log.verify()).toEqual({ ok: true, count: 0 });
      });
    });

    describe("lookups", () => {
      it("finds the latest of some types before a seq, the first of a type after one, and the newest", async () => {
        const log = await open();
        await log.append([pluginObserved("echo"), grantObserved("echo"), egressDecision("echo"), pluginObserved("echo", IMAGE_B), grantObserved("echo"), egressDecision("echo")]);
        expect((await log.lookups.lastOf("plugin/echo", ["plugin.observed", "grant.observed"], 5))?.seq).toBe(4);
        expect((await log.lookups.lastOf("plugin/echo", ["grant.observed"], 5))?.seq).toBe(2);
        expect(await log.lookups.lastOf("plugin/echo", ["grant.observed"], 2)).toBeNull();
        // The whole log, as the deciders ask: past any seq a log can reach.
        expect((await log.lookups.lastOf("plugin/echo", ["grant.observed"], Number.MAX_SAFE_INTEGER))?.seq).toBe(5);
        expect((await log.lookups.lastOf("egress/echo", ["egress.decision"], 6))?.seq).toBe(3);
        expect((await log.lookups.firstAfter("plugin/echo", "grant.observed", 2))?.seq).toBe(5);
        expect(await log.lookups.firstAfter("plugin/echo", "grant.observed", 5)).toBeNull();
        expect((await log.lookups.newest("plugin/echo", ["plugin.observed", "grant.observed"], 3)).map((e) => e.seq)).toEqual([5, 4, 2]);
        expect((await log.lookups.newest("egress/echo", ["egress.decision"], 5)).map((e) => e.seq)).toEqual([6, 3]);
      });

      it("finds config verdicts by image and signature verdicts by digest and exact manifest", async () => {
        const log = await open();
        const m = "d".repeat(64);
        const withManifest = (d: string, image: string): NewEvent => ({ ...verdict(d, image), data: { ...(verdict(d, image).data as object), manifest: m } });
        await log.append([configVerdict("echo", IMAGE_A), configVerdict("echo", IMAGE_B, false), configVerdict("echo", IMAGE_A, false)]);
        await log.append([verdict(DIGEST_A, IMAGE_A), withManifest(DIGEST_A, IMAGE_A), verdict(DIGEST_B, IMAGE_B, "refused")]);
        expect((await log.lookups.configVerdict("plugin/echo", IMAGE_A, 10))?.seq).toBe(3);
        expect((await log.lookups.configVerdict("plugin/echo", IMAGE_A, 3))?.seq).toBe(1);
        expect(await log.lookups.configVerdict("plugin/other", IMAGE_A, 10)).toBeNull();
        expect((await log.lookups.signatureVerdict(DIGEST_A, null))?.seq).toBe(4);
        expect((await log.lookups.signatureVerdict(DIGEST_A, m))?.seq).toBe(5);
        expect(await log.lookups.signatureVerdict(DIGEST_A, m, 5)).toBeNull();
        expect(await log.lookups.signatureVerdict(DIGEST_B, m)).toBeNull();
        expect((await log.lookups.signatureVerdict(DIGEST_B, null, 7))?.data.outcome).toBe("refused");
      });

      it("finds the seq at a time and each stream's head", async () => {
        const log = await open({ clock: steppingClock(Date.parse("2026-01-01T00:00:00Z")) });
        await log.append([pluginObserved("a"), egressDecision("a")]);
        await log.append([pluginObserved("b")]);
        await log.append([egressDecision("a"), grantObserved("a")]);
        expect(await log.lookups.seqAt(new Date("2025-12-31T23:59:59Z"))).toBe(0);
        expect(await log.lookups.seqAt(new Date("2026-01-01T00:00:00Z"))).toBe(2);
        expect(await log.lookups.seqAt(new Date("2026-01-01T00:00:01.500Z"))).toBe(3);
        expect(await log.lookups.seqAt(new Date("2027-01-01T00:00:00Z"))).toBe(5);
        expect(await log.lookups.streamHeads("plugin/")).toEqual([{ stream: "plugin/a", seq: 5 }, { stream: "plugin/b", seq: 3 }]);
        expect(await log.lookups.streamHeads("egress/")).toEqual([{ stream: "egress/a", seq: 4 }]);
        expect(await log.lookups.streamHeads("gateway/")).toEqual([]);
      });

      it("finds egress candidates within a bounded scan, by outcome and by host whatever its case", async () => {
        const log = await open();
        await log.append([egressTo("a", "API.example.com", true), egressTo("b", "api.example.com", false), pluginObserved("a"), egressTo("a", "other.example", true), egressTo("a", "api.example.com", false)]);
        const seqs = (r: { candidates: readonly KnownEvent[] }) => r.candidates.map((e) => e.seq);
        const all = await log.lookups.egressCandidates({ afterSeq: 0, scan: 10 });
        expect([seqs(all), all.bound]).toEqual([[1, 2, 4, 5], null]);
        const two = await log.lookups.egressCandidates({ afterSeq: 0, scan: 2 });
        expect([seqs(two), two.bound]).toEqual([[1, 2], 2]);
        expect(seqs(await log.lookups.egressCandidates({ afterSeq: 0, scan: 10, host: "api.example.com" }))).toEqual([1, 2, 5]);
        expect(seqs(await log.lookups.egressCandidates({ afterSeq: 0, scan: 10, allowed: false }))).toEqual([2, 5]);
        const a = await log.lookups.egressCandidates({ plugin: "a", afterSeq: 1, scan: 1, host: "api.example.com" });
        expect([seqs(a), a.bound]).toEqual([[], 4]);
        expect(seqs(await log.lookups.egressCandidates({ plugin: "a", afterSeq: 1, scan: 5, allowed: false }))).toEqual([5]);
      });

      it("gives at most `limit` candidates, the first in seq order, and the scan's bound whatever the limit", async () => {
        const log = await open();
        await log.append([egressTo("a", "h.example", true), egressTo("b", "h.example", false), egressTo("a", "H.example", false), egressTo("a", "x.example", false), egressTo("a", "h.example", true)]);
        const seqs = (r: { candidates: readonly KnownEvent[] }) => r.candidates.map((e) => e.seq);
        const two = await log.lookups.egressCandidates({ afterSeq: 0, scan: 4, limit: 2 });
        expect([seqs(two), two.bound]).toEqual([[1, 2], 4]);
        expect(seqs(await log.lookups.egressCandidates({ afterSeq: 1, scan: 10, limit: 2, host: "h.example" }))).toEqual([2, 3]);
        expect(seqs(await log.lookups.egressCandidates({ plugin: "a", afterSeq: 0, scan: 10, limit: 1, allowed: false }))).toEqual([3]);
        expect(seqs(await log.lookups.egressCandidates({ plugin: "a", afterSeq: 0, scan: 10, limit: 0 }))).toEqual([]);
        expect(seqs(await log.lookups.egressCandidates({ afterSeq: 0, scan: 10, limit: 99 }))).toEqual([1, 2, 3, 4, 5]);
      });

      it("finds a plugin's latest egress decisions within a time window and up to a seq", async () => {
        const log = await open({ clock: steppingClock(Date.parse("2026-01-01T00:00:00Z")) });
        for (let i = 0; i < 4; i++) await log.append([egressTo("a", `h${i}.example`, true), egressTo("b", "x.example", true)]);
        const got = await log.lookups.latestEgressDecisions("a", 6, { from: "2026-01-01T00:00:01.000Z", to: "2026-01-01T00:00:10.000Z" }, 5);
        expect(got.map((e) => e.seq)).toEqual([5, 3]);
        expect((await log.lookups.latestEgressDecisions("a", 100, { from: "2026-01-01T00:00:00.000Z", to: "2026-01-01T00:00:10.000Z" }, 1)).map((e) => e.seq)).toEqual([7]);
      });
    });

    describeLogTables(open, reopen);
    describeDeliveryTable(open);
    describeLogTree(() => open(), (log) => reopen(log), (log, sql) => fixture.asOwner(log, sql));

    describe("the hash chain", () => {
      it("verifies, and verifies from its last verified point only what came after", async () => {
        const log = await open();
        await log.append([pluginObserved("echo"), egressDecision("echo")]);
        expect(await log.verifiedPoint()).toBeNull();
        expect(await log.verifySinceCheckpoint()).toEqual({ ok: true, count: 2 });
        expect(await log.verifiedPoint()).toEqual({ seq: 2, hash: (await log.get(2))?.hash });
        await log.append([egressDecision("echo")]);
        expect(await log.verifySinceCheckpoint()).toEqual({ ok: true, count: 3 });
        expect((await log.verifiedPoint())?.seq).toBe(3);
        expect(await log.verify({ seq: 2, hash: "f".repeat(64) })).toMatchObject({ ok: false, seq: 2 });
      });

      it("names the first row an owner edited by hand, and reports and restores the guard dropped to do it", async () => {
        const log = await open();
        await log.append([pluginObserved("echo"), egressDecision("echo"), egressDecision("echo")]);
        expect(await log.verifySinceCheckpoint()).toEqual({ ok: true, count: 3 });
        expect(await log.checkGuards()).toEqual({ ok: true, missing: [] });
        await fixture.asOwner(log, fixture.dropGuardSql("events_no_update"));
        expect(await log.checkGuards()).toEqual({ ok: false, missing: ["events_no_update"] });
        await fixture.asOwner(log, "UPDATE events SET actor = 'mallory' WHERE seq = 3");
        expect(await log.verify()).toMatchObject({ ok: false, seq: 3, reason: expect.stringMatching(/edited/) });
        // The last verified row is hashed again by the walk that starts from it.
        expect(await log.verifySinceCheckpoint()).toMatchObject({ ok: false, seq: 3 });
        expect(await log.restoreGuards()).toEqual(["events_no_update"]);
        expect(await log.checkGuards()).toEqual({ ok: true, missing: [] });
        await expect(fixture.exec(log, "UPDATE events SET actor = 'eve' WHERE seq = 1")).rejects.toThrow(/append-only/);
      });

      it.each(["events_no_update", "events_no_delete"])("reports %s missing once dropped", async (guard) => {
        const log = await open();
        expect(fixture.guards).toContain(guard);
        await fixture.asOwner(log, fixture.dropGuardSql(guard));
        expect((await log.checkGuards()).missing).toEqual([guard]);
        expect(await log.restoreGuards()).toEqual([guard]);
        expect((await log.checkGuards()).ok).toBe(true);
      });

      it("names a deleted row as a gap", async () => {
        const log = await open();
        await log.append([pluginObserved("echo"), egressDecision("echo"), egressDecision("echo")]);
        await fixture.asOwner(log, fixture.dropGuardSql("events_no_delete"));
        await fixture.asOwner(log, "DELETE FROM events WHERE seq = 2");
        expect(await log.verify()).toMatchObject({ ok: false, seq: 3, reason: expect.stringMatching(/gap/) });
      });
    });

    describe("subscriptions", () => {
      it("tells a listener every event appended after it subscribed, once, in order, until it unsubscribes", async () => {
        const log = await open();
        await log.append([pluginObserved("before")]);
        const heard: number[] = [];
        const stop = log.subscribe((events) => heard.push(...events.map((e) => e.seq)));
        await log.append([pluginObserved("a"), egressDecision("a")]);
        await log.observe(pluginObserved("b"));
        await log.observe(pluginObserved("b"));
        await until(() => heard.length >= 3);
        expect(heard).toEqual([2, 3, 4]);
        stop();
        await log.append([pluginObserved("c")]);
        await new Promise((r) => setTimeout(r, 100));
        expect(heard).toEqual([2, 3, 4]);
      });
    });

    describe("raw copy", () => {
      it("reads rows exactly as kept and imports them into an empty log, which then holds the same bytes", async () => {
        const a = await open();
        await a.append([pluginObserved("echo"), { ...egressDecision("echo"), causedBy: 1 }, verdict(DIGEST_A, IMAGE_A)]);
        await a.append([grantObserved("echo")]);
        const rows = await rawRows(a, 3);
        expect(rows.map((r) => r.seq)).toEqual([1, 2, 3, 4]);
        const b = await open();
        expect(await b.importRaw(rows.slice(0, 2))).toEqual({ seq: 2, hash: rows[1]?.hash });
        expect(await b.importRaw(rows.slice(2))).toEqual({ seq: 4, hash: rows[3]?.hash });
        expect(await rawRows(b)).toEqual(rows);
        expect(await b.verify()).toEqual({ ok: true, count: 4 });
        expect(await b.read()).toEqual(await a.read());
      });

      it.each([
        ["a row whose data was changed", (r: RawEventRow[]) => r.map((x, i) => (i === 1 ? { ...x, data: x.data.replace("echo", "ecko") } : x)), "tampered"],
        ["a row left out", (r: RawEventRow[]) => r.filter((_x, i) => i !== 1), "tampered"],
        ["a row whose link was changed", (r: RawEventRow[]) => r.map((x, i) => (i === 2 ? { ...x, prevHash: GENESIS_HASH } : x)), "tampered"],
      ])("refuses an import holding %s, writing nothing", async (_what, change, code) => {
        const a = await open();
        await a.append([pluginObserved("echo"), egressDecision("echo"), egressDecision("echo")]);
        const b = await open();
        expect(await codeOf(b.importRaw(change(await rawRows(a))))).toBe(code);
        expect(await b.head()).toBe(0);
      });

      it("refuses rows that do not continue a log that is not empty", async () => {
        const a = await open();
        await a.append([pluginObserved("echo"), egressDecision("echo")]);
        const b = await open();
        await b.append([pluginObserved("other")]);
        expect(await codeOf(b.importRaw(await rawRows(a)))).toBe("not_empty");
        expect(await b.head()).toBe(1);
      });
    });
  });
}
