/**
 * One log, two stores: the same batches appended with the same clock give the same rows and
 * hashes on SQLite and on PostgreSQL, and a log copied between them (migrateLog) holds the same
 * bytes, verifies, and reads the same.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { StoreError } from "../../src/events/errors.js";
import { migrateLog } from "../../src/events/migrate.js";
import type { EventLog } from "../../src/events/port.js";
import { openPostgresLog } from "../../src/events/postgres/index.js";
import { literal } from "../../src/events/postgres/sql.js";
import type { NewEvent } from "../../src/events/types.js";
import { rawRows } from "../support/event-log-contract.js";
import { openStore } from "../../src/events/store.js";
import { configVerdict, DIGEST_A, egressDecision, grantObserved, IMAGE_A, pluginObserved, steppingClock, verdict } from "./helpers.js";
import { startLogDatabases } from "./postgres-support.js";
import type { LogDatabases } from "./postgres-support.js";

let dbs: LogDatabases;
let dir: string;
let n = 0;
const logs: EventLog[] = [];
beforeAll(async () => { dbs = await startLogDatabases(); dir = mkdtempSync(join(tmpdir(), "openfief-cross-")); });
afterEach(async () => { for (const l of logs.splice(0)) await l.close(); });
afterAll(async () => { await dbs?.stop(); rmSync(dir, { recursive: true, force: true }); });

type Store = "sqlite" | "postgres";

async function open(store: Store, clock = steppingClock()): Promise<EventLog> {
  const log = store === "sqlite"
    ? await openStore({ file: join(dir, `log${++n}.db`), clock })
    : await openPostgresLog({ url: await dbs.fresh(), clock });
  logs.push(log);
  return log;
}

/** Batches covering every column: causes, several streams, verdicts, text that JSON escapes, numbers. */
function batches(): NewEvent[][] {
  const odd = { name: "echo", spec: { note: "quote ' and \"double\", tab\t, é, 😀, \u2028, <>&", n: [1.5, -0, 1e21, 0.1], nested: { b: null, a: true } } };
  return [
    [pluginObserved("echo"), grantObserved("echo"), { stream: "plugin/echo", type: "plugin.observed", actor: "owner:cli", data: odd }],
    [verdict(DIGEST_A, IMAGE_A), { ...configVerdict("echo", IMAGE_A), causedBy: 1 }],
    Array.from({ length: 50 }, (_, i) => ({ ...egressDecision(i % 2 === 0 ? "echo" : "ping", i % 3 !== 0), causedBy: 2 })),
  ];
}

async function fill(log: EventLog): Promise<void> {
  for (const b of batches()) await log.append(b);
  await log.observe(pluginObserved("ping"));
  await log.observe(pluginObserved("ping"));
}

describe("the same appends on both stores", () => {
  it("give the same rows, byte for byte, and the same hashes", async () => {
    const sqlite = await open("sqlite");
    const postgres = await open("postgres");
    await fill(sqlite);
    await fill(postgres);
    const a = await rawRows(sqlite);
    expect(a).toHaveLength(56);
    expect(await rawRows(postgres)).toEqual(a);
    expect(await postgres.read()).toEqual(await sqlite.read());
  });
});

describe("text as the PostgreSQL log writes it", () => {
  it("reads back exactly as written, whatever characters it holds", async () => {
    const texts = fc.sample(fc.string({ unit: "binary", maxLength: 40 }).filter((t) => !t.includes("\0")), 300);
    texts.push("'", "''", "\\'", "$$", "\\", "E'\\x'", "--", "/*", ";");
    const [r] = await dbs.run(dbs.server.url, `SELECT ARRAY[${texts.map(literal).join(", ")}]::text[] AS t`);
    // Lone surrogates cannot be sent as UTF-8: they arrive as U+FFFD, as every store keeps them.
    expect(r?.rows[0]?.t).toEqual(texts.map((t) => Buffer.from(t, "utf8").toString("utf8")));
  });
});

describe("copying a log between stores", () => {
  it.each<[Store, Store]>([["sqlite", "postgres"], ["postgres", "sqlite"], ["postgres", "postgres"], ["sqlite", "sqlite"]])(
    "from %s to %s copies every row as kept and verifies the copy", async (from, to) => {
      const source = await open(from);
      await fill(source);
      const dest = await open(to);
      const progress: number[] = [];
      const result = await migrateLog(source, dest, { pageSize: 20, progress: (seq) => progress.push(seq) });
      expect(result).toEqual({ copied: 56, compared: 56, head: await source.headPoint() });
      expect(progress).toEqual([20, 40, 56]);
      expect(await rawRows(dest)).toEqual(await rawRows(source));
      expect(await dest.verify()).toEqual({ ok: true, count: 56 });
      expect(await dest.read({ stream: "egress/echo" })).toEqual(await source.read({ stream: "egress/echo" }));
      // The copy goes on as a log: the next append chains after the copied head.
      const [next] = await dest.append([pluginObserved("after")]);
      expect([next?.seq, next?.prevHash]).toEqual([57, result.head.hash]);
    });

  it("resumes a copy that was interrupted, writing only the rest", async () => {
    const source = await open("sqlite");
    await fill(source);
    const dest = await open("postgres");
    await dest.importRaw((await rawRows(source)).slice(0, 30));
    const result = await migrateLog(source, dest);
    expect([result.copied, result.compared, result.head.seq]).toEqual([26, 56, 56]);
  });

  it("refuses a destination that holds other events", async () => {
    const source = await open("sqlite");
    await fill(source);
    const dest = await open("postgres");
    await dest.append([pluginObserved("other")]);
    await expect(migrateLog(source, dest)).rejects.toMatchObject({ code: "not_empty" });
    expect(await dest.head()).toBe(1);
  });

  it("stops at a source row that does not hold, naming it, with the rows before it copied", async () => {
    const source = await open("postgres");
    await fill(source);
    // The superuser's URL has no password: the location is the URL.
    await dbs.run(source.location, "DROP TRIGGER events_no_update ON events; UPDATE events SET actor = 'mallory' WHERE seq = 45");
    const dest = await open("sqlite");
    let err: unknown;
    try { await migrateLog(source, dest, { pageSize: 10 }); } catch (e) { err = e; }
    expect(err).toBeInstanceOf(StoreError);
    expect([(err as StoreError).code, (err as StoreError).message]).toEqual(["tampered", expect.stringContaining("seq 45")]);
    expect(await dest.head()).toBe(40);
  });
});
