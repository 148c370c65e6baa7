import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
// The SQLite adapter itself: its connection is looked at where the port cannot say (pragmas, plans, raw rows).
import Database from "better-sqlite3";
import { Checkpointer } from "./checkpointer.js";
import { openSqliteLog as openStore, StoreError } from "./store.js";
import { STREAM_TYPE_INDEXED } from "./streams.js";
import type { SqliteEventLog as EventLog } from "./store.js";
import type { NewEvent } from "./types.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const STORE_MODULE = pathToFileURL(fileURLToPath(new URL("./store.ts", import.meta.url))).href;

function egress(plugin: string, n: number): NewEvent {
  return { stream: `egress/${plugin}`, type: "egress.decision", actor: "egress", data: { port: 443, host: `h${n}.example.com`, plugin, allowed: true, reason: "listed", rules: 1 } };
}

/** Every stream's versions run 1..n without a gap, and seqs run 1..head. */
async function contiguous(store: EventLog): Promise<boolean> {
  const all = await store.read();
  const byStream = new Map<string, number[]>();
  for (const e of all) byStream.set(e.stream, [...(byStream.get(e.stream) ?? []), e.version]);
  return all.every((e, i) => e.seq === i + 1) && [...byStream.values()].every((vs) => vs.every((v, i) => v === i + 1));
}

describe("appending from several connections to one file", () => {
  let dir: string;
  let file: string;
  beforeEach(() => { dir = mkdtempSync(join(tmpdir(), "openfief-store-")); file = join(dir, "events.db"); });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("extends the chain and the stream versions the other connection wrote, never a copy in memory", async () => {
    const a = await openStore({ file });
    const b = await openStore({ file });
    try {
      for (let i = 0; i < 6; i++) {
        await (i % 2 === 0 ? a : b).append([egress("echo", i), egress("ping", i), { ...egress("echo", i + 100) }]);
      }
      expect(await a.head()).toBe(18);
      expect(await b.version("egress/echo")).toBe(12);
      expect(await a.verify()).toEqual({ ok: true, count: 18 });
      expect(await contiguous(b)).toBe(true);
      const last = await a.get(18);
      expect((await b.get(18))?.hash).toBe(last?.hash);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it("refuses a stale expected version read through another connection", async () => {
    const a = await openStore({ file });
    const b = await openStore({ file });
    try {
      const seen = await b.version("egress/echo");
      await a.append([egress("echo", 1)]);
      await expect(b.append([egress("echo", 2)], { expected: { "egress/echo": seen } })).rejects.toThrow(/expected 0/);
      expect((await b.append([egress("echo", 2)], { expected: { "egress/echo": 1 } }))[0]?.version).toBe(2);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it("keeps one valid chain when two processes append to the same streams at once", async () => {
    const setup = await openStore({ file });
    await setup.close();
    const go = join(dir, "go");
    let ready = 0;
    const child = (tag: string) => new Promise<{ code: number | null; stderr: string }>((resolve, reject) => {
      const code = `
        const { openStore } = await import(${JSON.stringify(STORE_MODULE)});
        const store = await openStore({ file: ${JSON.stringify(file)} });
        // Both processes are open before either appends, so their appends interleave.
        process.stdout.write("ready\\n");
        const { existsSync } = await import("node:fs");
        while (!existsSync(${JSON.stringify(go)})) await new Promise((r) => setTimeout(r, 5));
        for (let i = 0; i < 40; i++) {
          store.append([0, 1, 2].map((k) => ({ stream: "egress/echo", type: "egress.decision", actor: "egress", data: { plugin: "echo", host: "${tag}" + i + "-" + k + ".example.com", port: 443, allowed: true, reason: "listed", rules: 1 } })));
          store.append([{ stream: "trust", type: "signature.verdict", actor: "trust", data: { digest: "sha256:" + "a".repeat(64), image: "r.example/x@sha256:" + "a".repeat(64), outcome: "verified", signers: [], identities: [], trustRoot: "${tag}", catalog: String(i), rules: 1 } }]);
        }
        await store.close();`;
      const p = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", code], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
      p.stdout.on("data", () => { if (++ready === 2) writeFileSync(go, ""); });
      let stderr = "";
      p.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
      p.on("error", reject);
      p.on("close", (c) => resolve({ code: c, stderr }));
    });
    const results = await Promise.all([child("one"), child("two")]);
    expect(results).toEqual([{ code: 0, stderr: "" }, { code: 0, stderr: "" }]);
    const store = await openStore({ file });
    try {
      expect(await store.head()).toBe(2 * 40 * 4);
      expect(await store.verify()).toEqual({ ok: true, count: 320 });
      expect(await store.version("egress/echo")).toBe(240);
      expect(await store.version("trust")).toBe(80);
      expect(await contiguous(store)).toBe(true);
    } finally {
      await store.close();
    }
  });
});

describe("durable commits", () => {
  let dir: string;
  let store: EventLog;
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), "openfief-store-"));
    store = await openStore({ file: join(dir, "events.db") });
  });
  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const sync = (): unknown => store.database.pragma("synchronous", { simple: true });

  /** `synchronous` at each commit `write` makes (2 is FULL: synced before the commit returns). */
  async function syncAtCommits(write: () => Promise<unknown>): Promise<unknown[]> {
    const seen: unknown[] = [];
    const off = store.subscribe(() => seen.push(sync()));
    try {
      await write();
    } finally {
      off();
    }
    return seen;
  }

  it("run at synchronous=FULL inside durably(), nested too, and at NORMAL after it, even when it throws", async () => {
    expect(sync()).toBe(1);
    const seen = await store.durably(async () => {
      await store.append([egress("echo", 1)]);
      const inner = await store.durably(async () => sync());
      return [inner, sync()];
    });
    expect(seen).toEqual([2, 2]);
    expect(sync()).toBe(1);
    await expect(store.durably(async () => { throw new Error("refused"); })).rejects.toThrow("refused");
    expect(sync()).toBe(1);
    expect(await store.head()).toBe(1);
  });

  it("run at FULL one by one with { durable: true } (append and observe), the connection back at NORMAL after each", async () => {
    expect(await syncAtCommits(() => store.append([egress("echo", 1)], { durable: true }))).toEqual([2]);
    expect(sync()).toBe(1);
    expect(await syncAtCommits(() => store.observe({ stream: "plugin/echo", type: "grant.deleted", actor: "owner:cli", data: { name: "echo" } }, { durable: true }))).toEqual([2]);
    expect(sync()).toBe(1);
    expect(await syncAtCommits(() => store.append([egress("echo", 2)]))).toEqual([1]);
  });

  it("make another caller's commit durable too while durable work waits in between, never the reverse", async () => {
    let release = (): void => undefined;
    const waiting = new Promise<void>((resolve) => { release = resolve; });
    const durable = store.durably(async () => {
      await store.append([egress("echo", 1)]);
      await waiting;
      await store.append([egress("echo", 2)]);
    });
    // Committed by someone else while the durable write awaits: the connection is at FULL.
    expect(await syncAtCommits(() => store.append([egress("other", 1)]))).toEqual([2]);
    release();
    await durable;
    expect(sync()).toBe(1);
    expect(await syncAtCommits(() => store.append([egress("other", 2)]))).toEqual([1]);
  });

  it("leave every commit at FULL on a connection opened durable (the egress writer's)", async () => {
    const durable = await openStore({ file: join(dir, "events.db"), durable: true });
    try {
      const at = (): unknown => durable.database.pragma("synchronous", { simple: true });
      expect(at()).toBe(2);
      await durable.durably(() => durable.append([egress("echo", 1)]));
      await durable.append([egress("echo", 2)]);
      expect(at()).toBe(2);
    } finally {
      await durable.close();
    }
  });
});

describe("the data of an appended event", () => {
  let dir: string;
  let store: EventLog;
  beforeEach(async () => { dir = mkdtempSync(join(tmpdir(), "openfief-store-")); store = await openStore({ file: join(dir, "events.db") }); });
  afterEach(async () => { await store.close(); rmSync(dir, { recursive: true, force: true }); });

  it("is returned as stored: canonical key order, toJSON applied, undefined members gone, detached from the input", async () => {
    const spec = { z: 1, when: new Date("2026-01-01T00:00:00Z"), gone: undefined, a: [{ y: 2, x: 1 }] };
    const [e] = await store.append([{ stream: "plugin/echo", type: "plugin.observed", actor: "cluster", data: { spec, name: "echo" } }]);
    spec.a.push({ y: 3, x: 3 });
    const stored = { name: "echo", spec: { a: [{ x: 1, y: 2 }], when: "2026-01-01T00:00:00.000Z", z: 1 } };
    expect(e?.data).toEqual(stored);
    expect(JSON.stringify(e?.data)).toBe(store.database.prepare("SELECT data FROM events WHERE seq = 1").pluck().get());
    expect((await store.get(1))?.data).toEqual(stored);
  });

  it.each([
    ["a non-finite number", { plugin: "echo", host: "h.example.com", port: Number.NaN, allowed: true, reason: "listed", rules: 1 }],
    ["a bigint", { plugin: "echo", host: "h.example.com", port: 443n, allowed: true, reason: "listed", rules: 1 }],
    ["a field that is only there as undefined", { plugin: "echo", host: "h.example.com", port: 443, allowed: true, reason: undefined , rules: 1}],
  ])("refuses data with %s, writing nothing", async (_what, data) => {
    const refusal = await store.append([egress("echo", 1), { stream: "egress/echo", type: "egress.decision", actor: "egress", data }]).then(() => null, (err: unknown) => err as StoreError);
    expect(refusal).toBeInstanceOf(StoreError);
    expect(refusal?.code).toBe("invalid_data");
    expect(refusal?.problems[0]?.index).toBe(1);
    expect(await store.head()).toBe(0);
  });
});

describe("the log's guards and an incremental walk of its chain", () => {
  it("finds dropped triggers, and restores them exactly", async () => {
    const dir = mkdtempSync(join(tmpdir(), "openfief-guards-"));
    const store = await openStore({ file: join(dir, "log.db") });
    try {
      expect(await store.checkGuards()).toEqual({ ok: true, missing: [] });
      store.database.exec("DROP TRIGGER events_no_delete");
      expect(await store.checkGuards()).toEqual({ ok: false, missing: ["events_no_delete"] });
      expect(await store.restoreGuards()).toEqual(["events_no_delete"]);
      expect((await store.checkGuards()).ok).toBe(true);
      store.database.exec("DROP TRIGGER events_no_update; CREATE TRIGGER events_no_update BEFORE UPDATE ON events WHEN 0 BEGIN SELECT 1; END");
      expect((await store.checkGuards()).missing).toEqual(["events_no_update"]);
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("walks only the rows after a verified point, and notices when that point was rewritten", async () => {
    const dir = mkdtempSync(join(tmpdir(), "openfief-verify-from-"));
    const store = await openStore({ file: join(dir, "log.db") });
    try {
      for (let i = 0; i < 5; i++) await store.append([{ stream: "egress/echo", type: "egress.decision", actor: "egress", data: { plugin: "echo", host: "a.example", port: 443 + i, allowed: true, reason: "granted", rules: 1 } }]);
      const at = await store.headPoint();
      expect(at.seq).toBe(5);
      await store.append([{ stream: "egress/echo", type: "egress.decision", actor: "egress", data: { plugin: "echo", host: "b.example", port: 443, allowed: true, reason: "granted", rules: 1 } }]);
      expect(await store.verify(at)).toEqual({ ok: true, count: 6 });
      expect(await store.verify({ seq: 5, hash: "0".repeat(64) })).toMatchObject({ ok: false, seq: 5 });
      store.database.exec("DROP TRIGGER events_no_update");
      store.database.exec("UPDATE events SET actor = 'mallory' WHERE seq = 6");
      expect(await store.verify(at)).toMatchObject({ ok: false, seq: 6 });
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("the catalog's schemas", () => {
  it("all compile (they compile on first use, so a bad one would otherwise show only at its first append)", async () => {
    const { createCatalog } = await import("./catalog.js");
    const r = createCatalog();
    for (const t of r.types()) expect(r.get(t)?.validate({}), t).not.toBeNull();
  });
});

describe("copying the write-ahead log back into the database file", () => {
  let dir: string;
  let file: string;
  beforeEach(() => { dir = mkdtempSync(join(tmpdir(), "openfief-checkpoint-")); file = join(dir, "events.db"); });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const batch = (i: number): NewEvent[] => Array.from({ length: 100 }, (_, k) => egress(`p${k % 20}`, i * 100 + k));
  const sizeOf = (f: string): number => { try { return statSync(f).size; } catch { return 0; } };

  it("is never done by an append: the store's checkpoint thread copies what the appends wrote", async () => {
    const store = await openStore({ file });
    try {
      const before = sizeOf(file);
      for (let i = 0; i < 40; i++) {
        await store.append(batch(i));
        // SQLite's own checkpoint, inside a commit, is off on the appending connection.
        expect(store.database.pragma("wal_autocheckpoint", { simple: true })).toBe(0);
      }
      // Without the thread nothing would ever grow the file: the appends wrote only to the WAL.
      for (let waited = 0; sizeOf(file) <= before && waited < 15_000; waited += 50) await new Promise((r) => setTimeout(r, 50));
      expect(sizeOf(file)).toBeGreaterThan(before);
      expect(await store.verify()).toEqual({ ok: true, count: 4_000 });
    } finally {
      await store.close();
    }
  });

  it("never makes an append wait behind a reader that holds an old snapshot", async () => {
    const store = await openStore({ file });
    await store.append(batch(0));
    // A reader that stays on its snapshot (a slow `openfief log | less`): the log cannot restart past it.
    const reader = new Database(file, { readonly: true });
    reader.prepare("BEGIN").run();
    reader.prepare("SELECT count(*) FROM events").get();
    // A second checkpoint thread on the file that wants a restart after a few pages.
    const eager = new Checkpointer(file, 16);
    // Enough events for the thread to start at once.
    eager.committed(1_000);
    let slowest = 0;
    try {
      for (let i = 1; i < 40; i++) {
        const t0 = performance.now();
        await store.append(batch(i).slice(0, 20));
        eager.committed(20);
        slowest = Math.max(slowest, performance.now() - t0);
        await new Promise((r) => setTimeout(r, 25));
      }
    } finally {
      reader.prepare("ROLLBACK").run();
      reader.close();
      await eager.close();
      await store.close();
    }
    // A restart that waited for the reader would have held every append for its 5 s busy timeout (or failed it).
    expect(slowest).toBeLessThan(3_000);
  });

  it("stops the thread with the store, whose close then leaves no WAL behind", async () => {
    const store = await openStore({ file });
    for (let i = 0; i < 20; i++) await store.append(batch(i));
    await store.close();
    expect(existsSync(`${file}-wal`)).toBe(false);
    const again = await openStore({ file });
    try {
      expect(await again.head()).toBe(2_000);
    } finally {
      await again.close();
    }
  });
});

describe("reading one stream between two seqs", () => {
  it("gives what filtering the whole log gives, read in the stream's own order", async () => {
    const dir = mkdtempSync(join(tmpdir(), "openfief-stream-read-"));
    const store = await openStore({ file: join(dir, "log.db") });
    try {
      // Three streams interleaved at random, some events appended together.
      const picks = fc.sample(fc.array(fc.integer({ min: 0, max: 2 }), { minLength: 1, maxLength: 4 }), { numRuns: 60, seed: 7 });
      for (const [i, batch] of picks.entries()) await store.append(batch.map((k, j) => egress(["a", "b", "c"][k] as string, i * 10 + j)));
      const all = await store.read();
      await fc.assert(fc.asyncProperty(fc.constantFrom("egress/a", "egress/b", "egress/c", "egress/none"), fc.integer({ min: 0, max: all.length + 2 }), fc.integer({ min: 0, max: all.length + 2 }), fc.option(fc.integer({ min: 0, max: 20 }), { nil: undefined }), async (stream, afterSeq, toSeq, limit) => {
        const want = all.filter((e) => e.stream === stream && e.seq > afterSeq && e.seq <= toSeq).slice(0, limit);
        expect((await store.read({ stream, afterSeq, toSeq, ...(limit === undefined ? {} : { limit }) })).map((e) => e.seq)).toEqual(want.map((e) => e.seq));
        const v = await store.versionsBetween(stream, afterSeq, toSeq);
        expect(Math.max(0, v.to - v.from + 1)).toBe(all.filter((e) => e.stream === stream && e.seq > afterSeq && e.seq <= toSeq).length);
      }), { numRuns: 300 });
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("the index on stream and type", () => {
  it("leaves out the decisions with streams of their own, and the store's queries name its condition so SQLite uses it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "openfief-index-"));
    const store = await openStore({ file: join(dir, "log.db") });
    try {
      const ddl = store.database.prepare<[], { sql: string }>("SELECT sql FROM sqlite_master WHERE name = 'events_stream_type_facts'").get()?.sql ?? "";
      expect(ddl.replace(/\s+/g, " ")).toMatch(new RegExp(`WHERE ${STREAM_TYPE_INDEXED.replace(/[()]/g, "\\$&")}$`));
      expect(store.database.prepare("SELECT count(*) FROM sqlite_master WHERE name = 'events_stream_type'").pluck().get()).toBe(0);
      const plan = (sql: string): string => (store.database.prepare(`EXPLAIN QUERY PLAN ${sql}`).all("plugin/echo", "plugin.observed") as { detail: string }[]).map((r) => r.detail).join(" ");
      expect(plan(`SELECT seq FROM events WHERE stream = ? AND type = ? AND ${STREAM_TYPE_INDEXED} ORDER BY version DESC LIMIT 1`)).toMatch(/events_stream_type_facts \(stream=\? AND type=\?\)/);
      await store.append([{ stream: "plugin/echo", type: "grant.deleted", actor: "owner:cli", data: { name: "echo" } }, egress("echo", 1)]);
      expect([(await store.last("plugin/echo", "grant.deleted"))?.seq, (await store.last("egress/echo", "egress.decision"))?.seq]).toEqual([1, 2]);
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
