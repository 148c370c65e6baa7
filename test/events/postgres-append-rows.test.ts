/**
 * How the PostgreSQL log writes a batch's rows (docs/adr/0190): a few rows as literals with the
 * COMMIT, more as one binary array per column in a statement of their own. Whichever way, the rows
 * are the bytes SQLite's store keeps for the same appends, and a text PostgreSQL cannot hold (a
 * NUL) is refused with nothing written.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { EventLog } from "../../src/events/port.js";
import { openPostgresLog } from "../../src/events/postgres/index.js";
import { openStore } from "../../src/events/store.js";
import type { NewEvent } from "../../src/events/types.js";
import { rawRows } from "../support/event-log-contract.js";
import { egressDecision, pluginObserved, steppingClock } from "./helpers.js";
import { startLogDatabases } from "./postgres-support.js";
import type { LogDatabases } from "./postgres-support.js";

let dbs: LogDatabases;
let dir: string;
let n = 0;
const logs: EventLog[] = [];
beforeAll(async () => { dbs = await startLogDatabases(); dir = mkdtempSync(join(tmpdir(), "openfief-rows-")); });
afterEach(async () => { for (const l of logs.splice(0)) await l.close(); });
afterAll(async () => { await dbs?.stop(); rmSync(dir, { recursive: true, force: true }); });

async function both(): Promise<[EventLog, EventLog]> {
  const sqlite = await openStore({ file: join(dir, `log${++n}.db`), clock: steppingClock() });
  const postgres = await openPostgresLog({ url: await dbs.fresh(), clock: steppingClock() });
  logs.push(sqlite, postgres);
  return [sqlite, postgres];
}

/** Texts that quoting, escaping or array syntax would trip on, and random ones of every code point but NUL. */
function texts(count: number): string[] {
  const odd = ["'", "''", "\\", "\\\\\"", "\"", "{", "}", "{a,b}", ",", "NULL", "null", "$1", "E'\\x00'", "--", ";", "é", "😀", "\u2028", " ", "\t\n\r"];
  const random = fc.sample(fc.string({ unit: "binary", minLength: 1, maxLength: 40 }).filter((t) => !t.includes("\0")), { numRuns: count, seed: 24 });
  return [...odd, ...random];
}

function oddBatch(words: readonly string[]): NewEvent[] {
  return words.map((w, i) => ({ ...pluginObserved(`p${i % 7}`), actor: w.slice(0, 200), data: { name: `p${i % 7}`, spec: { image: `registry.example/p@sha256:${"a".repeat(64)}`, note: w } } }));
}

describe("a batch's rows on PostgreSQL", () => {
  it("hold the bytes SQLite's store keeps, for a few rows, for many, and for more than one statement's worth", async () => {
    const [sqlite, postgres] = await both();
    const words = texts(80);
    const batches: NewEvent[][] = [
      oddBatch(words.slice(0, 3)),
      oddBatch(words),
      [{ ...pluginObserved("one"), actor: words[3] as string }],
      Array.from({ length: 5_003 }, (_, i) => ({ ...egressDecision(`p${i % 11}`, i % 5 !== 0), causedBy: i % 3 === 0 ? null : 2 })),
    ];
    for (const b of batches) {
      await sqlite.append(b);
      await postgres.append(b);
    }
    const rows = await rawRows(sqlite, 2_000);
    expect(rows).toHaveLength(3 + words.length + 1 + 5_003);
    expect(await rawRows(postgres, 2_000)).toEqual(rows);
    expect(await postgres.verify()).toEqual({ ok: true, count: rows.length });
  }, 60_000);

  it("refuse a NUL in a text, writing nothing, whether the rows go as literals or as arrays", async () => {
    const [, postgres] = await both();
    await postgres.append([pluginObserved("before")]);
    for (const size of [1, 40]) {
      const batch = oddBatch(Array.from({ length: size }, (_, i) => `w${i}`));
      batch[size - 1] = { ...(batch[size - 1] as NewEvent), actor: "a\0b" };
      await expect(postgres.append(batch)).rejects.toMatchObject({ code: "invalid_event" });
    }
    expect(await postgres.head()).toBe(1);
    const [next] = await postgres.append([pluginObserved("after")]);
    expect(next?.seq).toBe(2);
  });
});
