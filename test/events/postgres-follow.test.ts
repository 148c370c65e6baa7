/**
 * The PostgreSQL log with several connections: listeners hear what any connection commits (LISTEN/
 * NOTIFY), a listener whose connection is cut resumes from its last seq, and a transaction that
 * holds the write lock too long stalls writers only up to their deadline, and readers not at all.
 */
import pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { KnownEvent } from "../../src/events/catalog.js";
import { openPostgresLog } from "../../src/events/postgres/index.js";
import { Db } from "../../src/events/postgres/db.js";
import type { PostgresLogOptions } from "../../src/events/postgres/index.js";
import type { EventLog } from "../../src/events/port.js";
import { until as untilWithin } from "../support/event-log-contract.js";
import { egressDecision, pluginObserved } from "./helpers.js";
import { startLogDatabases } from "./postgres-support.js";
import type { LogDatabases } from "./postgres-support.js";

/**
 * How long a wait for another process may take on a loaded machine (polling runs psql, which alone
 * took seconds with two cores and six busy loops): the waits' own limit, past which they fail.
 */
const LOADED_MS = 20_000;
/** Waits for `check` up to {@link LOADED_MS}. */
const until = (check: () => boolean): Promise<void> => untilWithin(check, LOADED_MS);
/** Each test's own limit: past a wait's, so a wait's error says what was waited for. */
const TIMEOUT = { timeout: LOADED_MS + 20_000 };
/** The sleep a lost commit is caught in (see lose()). */
const SLEEP = "pg_sleep(25)";

/** The key of the log's write lock (src/events/postgres/sql.ts): what a session takes to stall writers. */
const WRITE_LOCK_KEY = "8030029660440585574";

let dbs: LogDatabases;
const logs: EventLog[] = [];
beforeAll(async () => { dbs = await startLogDatabases(); });
afterEach(async () => { for (const l of logs.splice(0)) await l.close(); });
afterAll(async () => { await dbs?.stop(); });

async function open(url: string, opts: Omit<PostgresLogOptions, "url"> = {}): Promise<EventLog> {
  const log = await openPostgresLog({ url, ...opts });
  logs.push(log);
  return log;
}

async function code(p: Promise<unknown>): Promise<string> {
  try { await p; } catch (err) { return (err as { code?: string }).code ?? String(err); }
  return "accepted";
}

/** Seqs heard, checked to arrive in order, each once. */
function hear(log: EventLog): number[] {
  const heard: number[] = [];
  log.subscribe((events: readonly KnownEvent[]) => heard.push(...events.map((e) => e.seq)));
  return heard;
}

const oneToN = (n: number): number[] => Array.from({ length: n }, (_, i) => i + 1);

describe("listeners", TIMEOUT, () => {
  it("hear every event another connection commits, once, in seq order", async () => {
    const url = await dbs.fresh();
    const a = await open(url);
    const b = await open(url);
    const heard = hear(a);
    for (let i = 0; i < 10; i++) await (i % 3 === 0 ? a : b).append([pluginObserved(`p${i}`), egressDecision(`p${i}`)]);
    await until(() => heard.length >= 20);
    await new Promise((r) => setTimeout(r, 100));
    expect(heard).toEqual(oneToN(20));
  });

  it("resume from their last seq when their connection is terminated, missing nothing and hearing nothing twice", async () => {
    const url = await dbs.fresh();
    const listener = await open(url);
    const writer = await open(url);
    const heard = hear(listener);
    await writer.append([pluginObserved("a")]);
    await until(() => heard.length === 1);
    const [killed] = await dbs.run(url, "SELECT count(*)::int AS n FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'openfief-listen' AND datname = current_database()) t");
    expect(killed?.rows[0]).toEqual({ n: 1 });
    for (let i = 0; i < 5; i++) await writer.append([egressDecision("a"), egressDecision("b")]);
    await until(() => heard.length >= 11);
    // Once it listens again, what is appended next is heard too.
    await until(() => Number((dbs.server.psql(`SELECT count(*) FROM pg_stat_activity WHERE application_name = 'openfief-listen' AND datname = '${new URL(url).pathname.slice(1)}'`)).trim()) === 1);
    await writer.append([pluginObserved("b")]);
    await until(() => heard.length >= 12);
    await new Promise((r) => setTimeout(r, 100));
    expect(heard).toEqual(oneToN(12));
  });

  it("stop hearing once they unsubscribe, and a closed log's listener connection is gone", async () => {
    const url = await dbs.fresh();
    const a = await open(url);
    const heard: number[] = [];
    const stop = a.subscribe((events) => heard.push(...events.map((e) => e.seq)));
    await a.append([pluginObserved("a")]);
    await until(() => heard.length === 1);
    stop();
    await a.append([pluginObserved("b")]);
    await new Promise((r) => setTimeout(r, 100));
    expect(heard).toEqual([1]);
    await a.close();
    const db = new URL(url).pathname.slice(1);
    await until(() => dbs.server.psql(`SELECT count(*) FROM pg_stat_activity WHERE datname = '${db}' AND application_name LIKE 'openfief%'`).trim() === "0");
  });
});

describe("a transaction that holds the write lock", () => {
  it("makes writers wait no longer than their lock deadline (busy, nothing written) while readers read on", async () => {
    const url = await dbs.fresh();
    const log = await open(url, { timeouts: { lock: 300 } });
    await log.append([pluginObserved("a")]);
    const holder = new pg.Client({ connectionString: url });
    await holder.connect();
    try {
      await holder.query(`BEGIN; SELECT pg_advisory_xact_lock(${WRITE_LOCK_KEY})`);
      const started = Date.now();
      expect(await code(log.append([pluginObserved("b")]))).toBe("busy");
      expect(Date.now() - started).toBeLessThan(5_000);
      expect((await log.read()).map((e) => e.seq)).toEqual([1]);
      expect(await log.verify()).toEqual({ ok: true, count: 1 });
      await holder.query("ROLLBACK");
      expect((await log.append([pluginObserved("b")]))[0]?.seq).toBe(2);
    } finally {
      await holder.end();
    }
  });

  it("is ended by the server once idle past its deadline, its writer told timeout and nothing written, and the next writer goes on", async () => {
    const url = await dbs.fresh();
    let stall = true;
    const slow = await open(url, { timeouts: { idleInTransaction: 300 }, whileLocked: () => new Promise((r) => setTimeout(r, stall ? 1_500 : 0)) });
    const other = await open(url, { timeouts: { lock: 5_000 } });
    const stuck = code(slow.append([pluginObserved("never")]));
    await new Promise((r) => setTimeout(r, 100));
    const next = other.append([pluginObserved("next")]);
    expect(await stuck).toBe("timeout");
    expect((await next)[0]?.seq).toBe(1);
    stall = false;
    expect((await slow.append([pluginObserved("after")]))[0]?.seq).toBe(2);
    expect((await other.read()).map((e) => e.data)).toEqual([{ name: "next", spec: expect.anything() }, { name: "after", spec: expect.anything() }]);
  });

  it("rolls back when the test hook throws inside it, writing nothing", async () => {
    const url = await dbs.fresh();
    const log = await open(url, { whileLocked: () => Promise.reject(new Error("rolled back on purpose")) });
    await expect(log.append([pluginObserved("a")])).rejects.toThrow(/on purpose/);
    expect(await log.head()).toBe(0);
  });
});

describe("a connection lost while committing", () => {
  /**
   * Runs a write transaction whose last statements end in a sleep, terminating its backend during
   * it. The sleep (SLEEP) outlasts any wait for it to be seen, even on a loaded machine, and stays
   * under the statement timeout (30 s): it always ends by the termination, never by itself.
   */
  async function lose(url: string, text: string): Promise<string> {
    const db = new Db(url, 2);
    try {
      const committing = db.locked("writing", "SELECT 1", async () => ({
        text, result: "answered", landed: async (locked) => (await locked.simple("SELECT count(*)::int AS n FROM events"))[0]?.rows[0]?.n === 1,
      }));
      await until(() => Number(dbs.server.psql(`SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%${SLEEP}%' AND state = 'active' AND pid <> pg_backend_pid()`).trim()) === 1);
      dbs.server.psql(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE '%${SLEEP}%' AND pid <> pg_backend_pid()`);
      try { return await committing; } catch (err) { return (err as { code?: string }).code ?? String(err); }
    } finally {
      await db.close();
    }
  }
  const row = "INSERT INTO events (seq, stream, version, type, schema_version, time, actor, caused_by, data, prev_hash, hash) VALUES (1, 'system', 1, 't', 1, 't', 'a', NULL, '{}', '', '')";

  it("is settled as not written when the rows are not there once the lock is had again", TIMEOUT, async () => {
    const url = await dbs.fresh();
    expect(await lose(url, `${row}; SELECT ${SLEEP}`)).toBe("unavailable");
    expect(dbs.server.psql("SELECT count(*) FROM events", new URL(url).pathname.slice(1)).trim()).toBe("0");
  });

  it("is settled as written when they are", TIMEOUT, async () => {
    const url = await dbs.fresh();
    expect(await lose(url, `${row}; COMMIT; SELECT ${SLEEP}`)).toBe("answered");
    expect(dbs.server.psql("SELECT count(*) FROM events", new URL(url).pathname.slice(1)).trim()).toBe("1");
  });
});
