import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Kysely, SqliteDialect, sql } from "kysely";
import { openStore } from "../../src/events/store.js";
import type { EventLog } from "../../src/events/store.js";
import { StoreError } from "../../src/events/errors.js";
import { EventRegistry } from "../../src/events/registry.js";
import { GENESIS_HASH } from "../../src/events/hash.js";
import type { NewEvent, StoredEvent } from "../../src/events/types.js";
import { withFile } from "../support/sqlite-file.js";
import { DIGEST_A, IMAGE_A, IMAGE_B, egressDecision, grantObserved, pluginObserved, steppingClock, tempDir, verdict } from "./helpers.js";

async function refusal(fn: () => Promise<unknown>): Promise<StoreError> {
  try { await fn(); } catch (err) { if (err instanceof StoreError) return err; throw err; }
  throw new Error("expected a StoreError");
}

describe("the event store", () => {
  let t: ReturnType<typeof tempDir>;
  let store: EventLog;
  beforeEach(async () => { t = tempDir(); store = await openStore({ file: t.file, clock: steppingClock() }); });
  afterEach(async () => { await store.close(); t.cleanup(); });

  it("appends a batch with a global sequence, stream versions, clock time and a hash chain", async () => {
    const out = await store.append([pluginObserved("echo"), grantObserved("echo"), verdict(DIGEST_A, IMAGE_A)]);
    expect(out.map((e) => [e.seq, e.stream, e.version])).toEqual([[1, "plugin/echo", 1], [2, "plugin/echo", 2], [3, "trust", 1]]);
    expect(out.every((e) => e.time === "2026-01-01T00:00:00.000Z")).toBe(true);
    expect(out[0]?.prevHash).toBe(GENESIS_HASH);
    expect(out[1]?.prevHash).toBe(out[0]?.hash);
    expect(out[2]?.prevHash).toBe(out[1]?.hash);
    expect(await store.head()).toBe(3);
    expect(await store.version("plugin/echo")).toBe(2);
    expect(await store.read()).toEqual(out);
    expect(await store.verify()).toEqual({ ok: true, count: 3 });
  });

  it("stores data as canonical JSON (RFC 8785), whatever the key order given", async () => {
    await store.append([{ stream: "plugin/echo", type: "plugin.observed", actor: "cluster", data: { spec: { z: 1, a: [2, 1] }, name: "echo" } }]);
    const raw = withFile(t.file, (db) => db.prepare("SELECT data FROM events WHERE seq = 1").pluck().get());
    expect(raw).toBe('{"name":"echo","spec":{"a":[2,1],"z":1}}');
  });

  it.each([
    ["UPDATE", "UPDATE events SET actor = 'mallory' WHERE seq = 1"],
    ["DELETE", "DELETE FROM events WHERE seq = 1"],
  ])("refuses %s on events in the database itself", async (_what, statement) => {
    await store.append([pluginObserved("echo")]);
    // Whatever connection asks, through better-sqlite3 or kysely.
    const other = new Database(t.file);
    try { expect(() => other.exec(statement)).toThrow(/append-only/); } finally { other.close(); }
    const k = new Kysely<unknown>({ dialect: new SqliteDialect({ database: new Database(t.file) }) });
    try { await expect(sql.raw(statement).execute(k)).rejects.toThrow(/append-only/); } finally { await k.destroy(); }
    expect(await store.verify()).toEqual({ ok: true, count: 1 });
  });

  it("refuses an append whose expected stream version is stale, naming stream, expected and actual", async () => {
    await store.append([pluginObserved("echo")], { expected: { "plugin/echo": 0 } });
    const err = await refusal(() => store.append([grantObserved("echo")], { expected: { "plugin/echo": 0 } }));
    expect(err.code).toBe("conflict");
    expect(err.conflict).toEqual({ stream: "plugin/echo", expected: 0, actual: 1 });
    expect(err.message).toContain("plugin/echo");
    expect(await store.head()).toBe(1);
    expect((await store.append([grantObserved("echo")], { expected: { "plugin/echo": 1 } }))[0]?.version).toBe(2);
  });

  const bad: [string, NewEvent, string][] = [
    ["an unknown type", { stream: "plugin/echo", type: "plugin.exploded", actor: "cluster", data: {} }, "unknown_type"],
    ["data missing a required field", { stream: "plugin/echo", type: "plugin.observed", actor: "cluster", data: { name: "echo" } }, "invalid_data"],
    ["data with an unknown top-level field", { stream: "plugin/echo", type: "plugin.deleted", actor: "cluster", data: { name: "echo", why: "x" } }, "invalid_data"],
    ["a verdict with an unknown outcome", { ...verdict(DIGEST_A, IMAGE_A), data: { ...(verdict(DIGEST_A, IMAGE_A).data as object), outcome: "maybe" } }, "invalid_data"],
    ["an event in another plugin's stream", { ...pluginObserved("echo"), stream: "plugin/other" }, "invalid_stream"],
    ["an invalid stream name", { ...pluginObserved("echo"), stream: "plugin/Echo!" }, "invalid_stream"],
    ["an empty actor", { ...pluginObserved("echo"), actor: "" }, "invalid_event"],
    ["a cause that names no event", { ...pluginObserved("echo"), causedBy: 99 }, "invalid_cause"],
  ];
  it.each(bad)("refuses %s and writes nothing of the batch", async (_what, event, code) => {
    await store.append([egressDecision("echo")]);
    const err = await refusal(() => store.append([pluginObserved("echo"), event, grantObserved("echo")]));
    expect(err.code).toBe(code);
    expect(await store.head()).toBe(1);
    expect(await store.read({ stream: "plugin/echo" })).toEqual([]);
  });

  it("lists every problem of a refused batch with its index and path", async () => {
    const err = await refusal(() => store.append([
      { stream: "plugin/echo", type: "plugin.observed", actor: "cluster", data: { name: "echo" } },
      { stream: "trust", type: "nope", actor: "x", data: {} },
    ]));
    expect(err.problems).toEqual([
      { index: 0, path: "data", message: expect.stringContaining("spec") as unknown as string },
      { index: 1, path: "type", message: 'unknown event type "nope"' },
    ]);
  });

  it("accepts a cause that names an earlier event", async () => {
    const [obs] = await store.append([pluginObserved("echo")]);
    const [dec] = await store.append([{ stream: "plugin/echo", type: "workload.applied", actor: "reconciler", causedBy: obs?.seq ?? 0, data: { name: "echo", target: "directory", ok: true } }]);
    expect(dec?.causedBy).toBe(1);
  });

  it("observes idempotently: the same spec twice appends once, in any key order", async () => {
    expect(await store.observe(pluginObserved("echo"))).not.toBeNull();
    const reordered: NewEvent = { stream: "plugin/echo", type: "plugin.observed", actor: "cluster", data: { spec: { manifest: (pluginObserved("echo").data as { spec: { manifest: unknown } }).spec.manifest, image: IMAGE_A }, name: "echo" } };
    expect(await store.observe(reordered)).toBeNull();
    expect(await store.observe(grantObserved("echo"))).not.toBeNull();
    expect(await store.observe(pluginObserved("echo"))).toBeNull();
    expect((await store.observe(pluginObserved("echo", IMAGE_B)))?.seq).toBe(3);
    expect(await store.head()).toBe(3);
  });

  it("records a re-created plugin with the same spec after its deletion", async () => {
    await store.observe(pluginObserved("echo"));
    expect(await store.observe({ stream: "plugin/echo", type: "plugin.deleted", actor: "cluster", data: { name: "echo" } })).not.toBeNull();
    expect(await store.observe({ stream: "plugin/echo", type: "plugin.deleted", actor: "cluster", data: { name: "echo" } })).toBeNull();
    expect(await store.observe(pluginObserved("echo"))).not.toBeNull();
    expect((await store.read({ stream: "plugin/echo" })).map((e) => e.type)).toEqual(["plugin.observed", "plugin.deleted", "plugin.observed"]);
  });

  it("reads by stream, prefix, type, sequence, time and limit", async () => {
    await store.append([pluginObserved("echo")]);
    await store.append([pluginObserved("ping")]);
    await store.append([egressDecision("echo"), egressDecision("echo", false)]);
    await store.append([verdict(DIGEST_A, IMAGE_A)]);
    const seqs = (es: StoredEvent[]) => es.map((e) => e.seq);
    expect(seqs(await store.read({ stream: "plugin/echo" }))).toEqual([1]);
    expect(seqs(await store.read({ streamPrefix: "plugin/" }))).toEqual([1, 2]);
    expect(seqs(await store.read({ type: ["egress.decision", "signature.verdict"] }))).toEqual([3, 4, 5]);
    expect(seqs(await store.read({ afterSeq: 1, toSeq: 4 }))).toEqual([2, 3, 4]);
    expect(seqs(await store.read({ since: new Date("2026-01-01T00:00:01Z"), until: new Date("2026-01-01T00:00:02Z") }))).toEqual([2, 3, 4]);
    expect(seqs(await store.read({ limit: 2 }))).toEqual([1, 2]);
    expect((await store.last("egress/echo"))?.seq).toBe(4);
    expect(await store.last("plugin/echo", "grant.observed")).toBeNull();
    expect((await store.get(5))?.type).toBe("signature.verdict");
  });

  it("notifies subscribers after a commit, and not after a refusal", async () => {
    const seen: number[] = [];
    const off = store.subscribe((es) => seen.push(...es.map((e) => e.seq)));
    await store.append([pluginObserved("echo"), grantObserved("echo")]);
    await expect(store.append([{ ...pluginObserved("echo"), type: "x" }])).rejects.toThrow(StoreError);
    off();
    await store.append([egressDecision("echo")]);
    expect(seen).toEqual([1, 2]);
  });

  it("refuses to work once closed", async () => {
    await store.close();
    expect((await refusal(() => store.head())).code).toBe("closed");
    store = await openStore({ file: t.file });
    expect(await store.head()).toBe(0);
  });
});

describe("the hash chain", () => {
  let t: ReturnType<typeof tempDir>;
  beforeEach(() => { t = tempDir(); });
  afterEach(() => t.cleanup());

  async function fiveEvents(): Promise<void> {
    const store = await openStore({ file: t.file, clock: steppingClock() });
    for (const n of ["a", "b", "c", "d", "e"]) await store.append([pluginObserved(n)]);
    expect(await store.verify()).toEqual({ ok: true, count: 5 });
    await store.close();
  }

  /** What someone with the sqlite3 shell could do: drop the triggers, then change rows. */
  function tamper(statement: string): void {
    const raw = new Database(t.file);
    raw.exec("DROP TRIGGER events_no_update; DROP TRIGGER events_no_delete;");
    raw.exec(statement);
    raw.close();
  }

  it.each([
    ["an edited data field", `UPDATE events SET data = replace(data, '"a"', '"z"') WHERE seq = 1`, 1, /edited/],
    ["an edited middle row", `UPDATE events SET data = replace(data, 'connector', 'view') WHERE seq = 3`, 3, /edited/],
    ["an edited actor", `UPDATE events SET actor = 'owner:cli' WHERE seq = 4`, 4, /edited/],
    ["a row whose hash was recomputed by hand", `UPDATE events SET hash = '${"f".repeat(64)}' WHERE seq = 2`, 2, /edited/],
    ["a deleted middle row", `DELETE FROM events WHERE seq = 3`, 4, /deleted/],
  ])("names the first row that does not hold after %s", async (_what, statement, seq, reason) => {
    await fiveEvents();
    tamper(statement);
    const store = await openStore({ file: t.file });
    const result = await store.verify();
    expect(result).toMatchObject({ ok: false, seq });
    expect(result.ok ? "" : result.reason).toMatch(reason);
    await store.close();
  });

  it("detects a row re-hashed after an edit at the row after it", async () => {
    await fiveEvents();
    const probe = new Database(t.file);
    const r = probe.prepare("SELECT * FROM events WHERE seq = 2").get() as Record<string, unknown>;
    probe.close();
    const { rowHash } = await import("../../src/events/hash.js");
    const data = String(r.data).replace('"b"', '"x"');
    const h = rowHash({ prevHash: String(r.prev_hash), seq: 2, stream: String(r.stream), version: 1, type: String(r.type), schemaVersion: 1, time: String(r.time), actor: String(r.actor), causedBy: null, data });
    tamper(`UPDATE events SET data = '${data}', hash = '${h}' WHERE seq = 2`);
    const store = await openStore({ file: t.file });
    expect(await store.verify()).toMatchObject({ ok: false, seq: 3 });
    await store.close();
  });
});

describe("upcasting", () => {
  it("reads a v1 row as the v2 shape without rewriting it", async () => {
    const t = tempDir();
    const owner = (stream: string) => (stream === "owner" ? null : "must go to stream owner");
    const v1Schema = { type: "object", required: ["text"], properties: { text: { type: "string" } }, additionalProperties: false };
    const v1 = new EventRegistry();
    v1.define({ type: "note.added", version: 1, schema: v1Schema, stream: owner });
    let store = await openStore({ file: t.file, registry: v1 });
    await store.append([{ stream: "owner", type: "note.added", actor: "owner:cli", data: { text: "hello world" } }]);
    await store.close();

    const v2 = new EventRegistry();
    v2.define({
      type: "note.added", version: 2, stream: owner,
      schema: { type: "object", required: ["text", "words"], properties: { text: { type: "string" }, words: { type: "integer" } }, additionalProperties: false },
      history: [{ version: 1, schema: v1Schema, upcast: (d) => ({ ...(d as { text: string }), words: (d as { text: string }).text.split(" ").length }) }],
    });
    store = await openStore({ file: t.file, registry: v2 });
    const [old] = await store.read();
    expect(old).toMatchObject({ schemaVersion: 1, data: { text: "hello world", words: 2 } });
    expect((await store.last("owner"))?.data).toEqual({ text: "hello world", words: 2 });
    expect(withFile(t.file, (db) => db.prepare("SELECT schema_version, data FROM events").get())).toEqual({ schema_version: 1, data: '{"text":"hello world"}' });
    await expect(store.append([{ stream: "owner", type: "note.added", actor: "owner:cli", data: { text: "v1 shape" } }])).rejects.toThrow(/words/);
    const [fresh] = await store.append([{ stream: "owner", type: "note.added", actor: "owner:cli", data: { text: "a b c", words: 3 } }]);
    expect(fresh?.schemaVersion).toBe(2);
    expect(await store.verify()).toEqual({ ok: true, count: 2 });
    await store.close();
    t.cleanup();
  });

  it("refuses to define a type whose history has a hole", () => {
    const r = new EventRegistry();
    expect(() => r.define({ type: "x", version: 3, schema: {}, stream: () => null, history: [{ version: 1, schema: {}, upcast: (d) => d }] })).toThrow(/version 2/);
  });
});
