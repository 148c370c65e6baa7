/**
 * The event log on PostgreSQL: the cluster's one log, shared by every process of the control
 * plane, with the SQLite store's guarantees (docs/adr/0125–0129).
 *
 * An append validates and canonicalises its batch (prepare.ts, as SQLite's store), then in one
 * transaction takes the write lock (a transaction-level advisory lock), reads the head and the
 * versions of its streams in a fresh snapshot, chains its rows in memory (chain.ts: the same bytes
 * and hash as SQLite's) and sends them, then the notification with the COMMIT: three round trips
 * whatever the batch's size (two for a batch of a few events, whose rows go with the COMMIT). Seqs
 * are given under the lock and the lock is released only once the commit is visible, so a reader
 * never sees seq n+1 before n. Reads are plain statements on a
 * bounded pool, each under a statement timeout; nothing here holds a lock a reader waits on.
 */
import type { EventOf, EventTypeName, KnownEvent } from "../catalog.js";
import { catalog } from "../catalog.js";
import { chainBatch, ChainWalk, walkFrom } from "../chain.js";
import type { ChainBreak, RawEventRow } from "../chain.js";
import { StoreError, StoreErrorCode } from "../errors.js";
import { GENESIS_HASH } from "../hash.js";
import type { AppendOptions, EventListener, EventLog, LogTree, PageFilter, RawPageFilter } from "../port.js";
import { StoredTree } from "../tree.js";
import { BatchPreparer, checkExpected, sameObservation } from "../prepare.js";
import type { LatestObserved, Prepared } from "../prepare.js";
import type { EventRegistry, EventType } from "../registry.js";
import { eventOfRow } from "../rows.js";
import { STREAM_TYPE_INDEXED, UNINDEXED_TYPES } from "../streams.js";
import type { LogTables } from "../tables.js";
import type { ChainPoint, GuardsResult, NewEvent, ReadFilter, VerifyResult } from "../types.js";
import { storeError } from "./connection.js";
import type { PostgresTimeouts } from "./connection.js";
import { Db } from "./db.js";
import type { Finish, Locked, Statement } from "./db.js";
import { Follower } from "./follower.js";
import { PostgresLookups } from "./lookups.js";
import { postgresTables } from "./tables.js";
import { pendingMigrations, runMigrations } from "./schema.js";
import { rowArrays, unnestInsertSql } from "./row-arrays.js";
import { ARRAY_COLUMNS, CHANNEL, GUARDS, guardDdl, INSERT_COLUMNS, integer, literal, normalizeSql, RAW_COLUMNS, REFUSE_BODY, rowOfArray, UNHASHED_ARRAY_COLUMNS } from "./sql.js";
import type { GuardName } from "./sql.js";
import pg from "pg";

/** Options of {@link openPostgresLog}. */
export interface PostgresLogOptions {
  /** `postgres://user:password@host:port/database`; the password never appears in `location` or a message. */
  readonly url: string;
  /** The event types accepted; defaults to the control plane's catalog. */
  readonly registry?: EventRegistry;
  /** The clock stamped on appended events (read under the write lock); defaults to the system clock. */
  readonly clock?: () => Date;
  /** Connections at most (default 8; never more than 64). */
  readonly poolSize?: number;
  /** Deadlines of every session (defaults: statement 30 s, lock 5 s, idle in a transaction 10 s, connect 10 s). */
  readonly timeouts?: PostgresTimeouts;
  /**
   * Whether to run missing migrations on open (default true, which needs the role that owns the
   * schema); false refuses to open a schema that lacks one (`migration`).
   */
  readonly migrate?: boolean;
  /**
   * For tests only: awaited inside each append's transaction with the write lock held (after the
   * head was read, before the rows are sent); throwing rolls the append back.
   */
  readonly whileLocked?: () => Promise<void>;
}

/** Events per INSERT statement (a batch larger than this sends several, one after the other). */
const INSERT_ROWS = 5_000;
/** Rows per page of reads that walk the log when the caller names no page size. */
const PAGE = 2_000;
const MAX_PAGE = 20_000;
/** Pages of a walk asked for at once (each on a connection of its own). */
const AHEAD = 3;
/** The highest code point: `prefix + TOP` bounds every name starting with `prefix` (names compare by bytes). */
const TOP = "\u{10FFFF}";

/** Opens the log at `opts.url`, migrating its schema first unless told not to. */
export async function openPostgresLog(opts: PostgresLogOptions): Promise<EventLog> {
  const db = new Db(opts.url, opts.poolSize ?? 8, opts.timeouts);
  let head: number;
  try {
    const pending = await pendingMigrations(db);
    if (pending.length > 0) {
      if (opts.migrate === false) {
        throw new StoreError(StoreErrorCode.Migration, `the log's schema lacks migrations ${pending.join(", ")}: run them as the schema's owner (openfief store init --store postgres://OWNER@HOST/DATABASE)`);
      }
      await runMigrations(db);
    }
    head = (await db.row<{ seq: number }>("reading the head", "SELECT seq FROM events ORDER BY seq DESC LIMIT 1"))?.seq ?? 0;
  } catch (err) {
    await db.close();
    throw err;
  }
  return new PostgresEventLog(db, opts.registry ?? catalog, opts.clock ?? (() => new Date()), opts.whileLocked, head);
}

/** Sorted and deduplicated stream names for a versions query (only valid names reach SQL). */
function streamsOf(batch: readonly Prepared[], expected: Readonly<Record<string, number>> | undefined, valid: (s: string) => boolean): string[] {
  const streams = new Set<string>();
  for (const e of batch) streams.add(e.stream);
  if (expected !== undefined) for (const s of Object.keys(expected)) if (valid(s)) streams.add(s);
  return [...streams];
}

/** The statements read under the lock: the head, then each stream's version. */
function headAndVersionsSql(streams: readonly string[]): string {
  const head = "SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1";
  if (streams.length === 0) return head;
  const values = streams.map((s) => `(${literal(s)})`).join(", ");
  return `${head}; SELECT s.stream, (SELECT max(e.version) FROM events e WHERE e.stream = s.stream) AS v FROM (VALUES ${values}) AS s(stream)`;
}

/** The latest event of an observation group in a stream, one index probe per type. */
function latestOfGroupSql(stream: string, types: readonly string[]): string {
  const parts = types.map((t) =>
    `(SELECT type, schema_version, data, version FROM events WHERE stream = ${literal(stream)} AND type = ${literal(t)}${UNINDEXED_TYPES.has(t) ? "" : ` AND ${STREAM_TYPE_INDEXED}`} ORDER BY version DESC LIMIT 1)`);
  return `SELECT * FROM (${parts.join(" UNION ALL ")}) g ORDER BY version DESC LIMIT 1`;
}

function headOf(r: pg.QueryResult | undefined): ChainPoint {
  const row = r?.rows[0] as { seq: number; hash: string } | undefined;
  return row === undefined ? { seq: 0, hash: GENESIS_HASH } : { seq: row.seq, hash: row.hash };
}

function versionsOf(r: pg.QueryResult | undefined): Map<string, number> {
  const versions = new Map<string, number>();
  for (const row of (r?.rows ?? []) as { stream: string; v: number | null }[]) versions.set(row.stream, row.v ?? 0);
  return versions;
}

/** The statement that writes rows (named: parsed and planned once per connection). */
const INSERT = { name: "openfief-append", text: unnestInsertSql("events") };

/**
 * Batches of at most this many rows are written by literals sent with the COMMIT (one round trip
 * fewer); larger ones by {@link INSERT} alone before it, whose cost does not grow with the batch
 * as a large statement's does when another follows it in a simple query (docs/adr/0190).
 */
const SMALL_BATCH = 8;

/** What writes rows and tells listeners, before and with the COMMIT. */
function writeRows(rows: readonly RawEventRow[]): { before: Statement[]; text: string } {
  const notify = `NOTIFY ${CHANNEL}, '${integer((rows[rows.length - 1] as RawEventRow).seq)}'`;
  if (rows.length <= SMALL_BATCH) return { before: [], text: `${literalInsertSql(rows)}; ${notify}` };
  const before: Statement[] = [];
  for (let i = 0; i < rows.length; i += INSERT_ROWS) before.push({ ...INSERT, values: rowArrays(rows.slice(i, i + INSERT_ROWS)) });
  return { before, text: notify };
}

/** An INSERT of a few rows as literals. */
function literalInsertSql(rows: readonly RawEventRow[]): string {
  const values = rows.map((r) => `(${integer(r.seq)},${literal(r.stream)},${integer(r.version)},${literal(r.type)},${integer(r.schemaVersion)},${literal(r.time)},` +
    `${literal(r.actor)},${r.causedBy === null ? "NULL" : integer(r.causedBy)},${literal(r.data)},${literal(r.prevHash)},${literal(r.hash)})`);
  return `INSERT INTO events (${INSERT_COLUMNS}) VALUES ${values.join(",")}`;
}

/** After a lost commit: whether the row at `seq` is the one this transaction wrote. */
function landedAt(seq: number, hash: string): (db: Locked) => Promise<boolean> {
  return async (db) => {
    const [r] = await db.simple(`SELECT hash FROM events WHERE seq = ${integer(seq)}`);
    return (r?.rows[0] as { hash?: string } | undefined)?.hash === hash;
  };
}

/** A raw row's fields have the types a row needs (the hash is checked after). */
function wellFormed(r: RawEventRow): boolean {
  const ints = [r.seq, r.version, r.schemaVersion].every((n) => Number.isSafeInteger(n) && n >= 1);
  const texts = [r.stream, r.type, r.time, r.actor, r.data, r.prevHash, r.hash].every((s) => typeof s === "string");
  return ints && texts && (r.causedBy === null || (Number.isSafeInteger(r.causedBy) && r.causedBy >= 1 && r.causedBy < r.seq));
}

/** A read's bounds on seqs: within one stream, as bounds on its versions (its index read in order rather than the stream sorted). */
function seqTerms(filter: ReadFilter, p: (v: unknown) => string): string[] {
  const where: string[] = [];
  if (filter.stream !== undefined) {
    const s = p(filter.stream);
    where.push(`stream = ${s}`);
    if (filter.afterSeq !== undefined) where.push(`version >= events_version_after(${s}, ${p(filter.afterSeq)})`);
    if (filter.toSeq !== undefined) where.push(`version < events_version_after(${s}, ${p(filter.toSeq)})`);
  } else {
    if (filter.afterSeq !== undefined) where.push(`seq > ${p(filter.afterSeq)}`);
    if (filter.toSeq !== undefined) where.push(`seq <= ${p(filter.toSeq)}`);
  }
  return where;
}

/** The statement of a read, or null when nothing can match. */
function readSql(filter: ReadFilter): { sql: string; values: unknown[] } | null {
  const values: unknown[] = [];
  const p = (v: unknown): string => { values.push(v); return `$${values.length}`; };
  const where = seqTerms(filter, p);
  if (filter.streamPrefix !== undefined) where.push(`stream >= ${p(filter.streamPrefix)} AND stream < ${p(filter.streamPrefix + TOP)}`);
  if (filter.type !== undefined) {
    const types = typeof filter.type === "string" ? [filter.type] : [...filter.type];
    if (types.length === 0) return null;
    where.push(types.length === 1 ? `type = ${p(types[0])}` : `type = ANY(${p(types)}::text[])`);
    if (filter.stream !== undefined && types.every((t) => !UNINDEXED_TYPES.has(t))) where.push(STREAM_TYPE_INDEXED);
  }
  if (filter.since !== undefined) where.push(`time >= ${p(filter.since.toISOString())}`);
  if (filter.until !== undefined) where.push(`time <= ${p(filter.until.toISOString())}`);
  let sql = `SELECT ${RAW_COLUMNS} FROM events${where.length > 0 ? ` WHERE ${where.join(" AND ")}` : ""} ORDER BY ${filter.stream === undefined ? "seq" : "version"}`;
  if (filter.limit !== undefined) sql += ` LIMIT ${p(Math.max(0, Math.floor(filter.limit)))}`;
  return { sql, values };
}

class PostgresEventLog implements EventLog {
  readonly kind = "postgres" as const;
  readonly location: string;
  readonly lookups: PostgresLookups;
  readonly tables: LogTables;
  readonly tree: LogTree;
  readonly #db: Db;
  readonly #clock: () => Date;
  readonly #preparer: BatchPreparer;
  readonly #follower: Follower;
  readonly #whileLocked: (() => Promise<void>) | undefined;
  /** The latest seq this log knows was committed: its head when opened, or since (see {@link Follower}). */
  #known: number;

  constructor(db: Db, readonly registry: EventRegistry, clock: () => Date, whileLocked: (() => Promise<void>) | undefined, head: number) {
    this.#db = db;
    this.#known = head;
    this.location = db.location;
    this.#clock = clock;
    this.#whileLocked = whileLocked;
    this.#preparer = new BatchPreparer(registry);
    this.lookups = new PostgresLookups(db, registry);
    this.tables = postgresTables(db, (doing, event, change) => this.#append(doing, [event], undefined, change));
    this.tree = new StoredTree(this, () => this.tables.tree);
    this.#follower = new Follower({
      listen: (onNotify) => this.#listen(onNotify),
      head: () => this.head(),
      pages: (afterSeq, toSeq) => this.pages({ afterSeq, toSeq }),
    });
  }

  async append(batch: readonly NewEvent[], opts: AppendOptions = {}): Promise<KnownEvent[]> {
    return this.#append("appending to the log", batch, opts.expected);
  }

  /**
   * The one write path of events: the write lock, the head and versions, then (when given) `change`
   * in the same transaction — a table's row written with the event that records it; the batch is
   * appended only when `change` changed something.
   */
  async #append(doing: string, batch: readonly NewEvent[], expected: AppendOptions["expected"], change?: (tx: Locked) => Promise<boolean>): Promise<KnownEvent[]> {
    const prepared = this.#preparer.prepare(batch);
    if (prepared.length === 0) return [];
    const streams = streamsOf(prepared, expected, (s) => this.#preparer.validStream(s));
    return this.#committing(this.#db.locked(doing, headAndVersionsSql(streams), async (results, tx) => {
      const versions = versionsOf(results[1]);
      checkExpected(expected, versions);
      if (change !== undefined && !(await change(tx))) return { text: "", result: [] };
      return this.#finish(prepared, headOf(results[0]), versions);
    }));
  }

  /** Tells the follower of an append once it committed. */
  async #committing(locked: Promise<KnownEvent[]>): Promise<KnownEvent[]> {
    const events = await locked;
    this.#saw(events[events.length - 1]?.seq ?? 0);
    this.#follower.committed(events);
    return events;
  }

  /** Remembers a seq known to be committed (where a first subscriber starts). */
  #saw(seq: number): void {
    if (seq > this.#known) this.#known = seq;
  }

  async observe(event: NewEvent): Promise<KnownEvent | null> {
    const [prepared] = this.#preparer.prepare([event]) as [Prepared];
    const def = this.registry.get(prepared.type) as EventType;
    const first = `${headAndVersionsSql([prepared.stream])}; ${latestOfGroupSql(prepared.stream, def.observeGroup)}`;
    const events = await this.#committing(this.#db.locked("observing", first, async (results) => {
      const latest = results[2]?.rows[0] as LatestObserved | undefined;
      if (sameObservation(def, latest, prepared)) return { text: "", result: [] };
      return this.#finish([prepared], headOf(results[0]), versionsOf(results[1]));
    }));
    return events[0] ?? null;
  }

  /** Chains the batch after the head, stamped now, and the statements that write it and notify. */
  async #finish(prepared: readonly Prepared[], head: ChainPoint, versions: Map<string, number>): Promise<Finish<KnownEvent[]>> {
    if (this.#whileLocked !== undefined) await this.#whileLocked();
    const { rows, events } = chainBatch(prepared, head, versions, this.#clock().toISOString());
    const first = rows[0] as RawEventRow;
    return { ...writeRows(rows), result: events, landed: landedAt(first.seq, first.hash) };
  }

  /** Every PostgreSQL commit of this log waits for its WAL to be flushed (`synchronous_commit=on` on each session). */
  async durably<T>(fn: () => Promise<T>): Promise<T> {
    return fn();
  }

  read(filter?: ReadFilter): Promise<KnownEvent[]>;
  read<T extends EventTypeName>(filter: ReadFilter & { readonly type: T | readonly T[] }): Promise<EventOf<T>[]>;
  async read(filter: ReadFilter = {}): Promise<KnownEvent[]> {
    const q = readSql(filter);
    if (q === null) return [];
    return (await this.#db.rows<RawEventRow>("reading the log", q.sql, q.values)).map((r) => eventOfRow(this.registry, r));
  }

  async *pages(filter: PageFilter): AsyncIterable<readonly KnownEvent[]> {
    const columns = filter.hashes === false ? UNHASHED_ARRAY_COLUMNS : ARRAY_COLUMNS;
    const types = filter.types === undefined ? null : [...filter.types];
    if (types !== null && types.length === 0) return;
    const rows = types === null
      ? this.#ranges(`SELECT ${columns} FROM events WHERE seq > $1 AND seq <= $2 ORDER BY seq`, filter)
      : this.#walk(`SELECT ${columns} FROM events WHERE seq > $1 AND seq <= $2 AND type = ANY($4::text[]) ORDER BY seq LIMIT $3`, filter, (after, to, size) => [after, to, size, types]);
    for await (const page of rows) yield page.map((r) => eventOfRow(this.registry, r));
  }

  rawPages(filter: RawPageFilter = {}): AsyncIterable<readonly RawEventRow[]> {
    return this.#ranges(`SELECT ${ARRAY_COLUMNS} FROM events WHERE seq > $1 AND seq <= $2 ORDER BY seq`, filter);
  }

  #page(sql: string, values: unknown[]): Promise<RawEventRow[]> {
    const q = this.#db.arrays("reading a page of the log", sql, values).then((rows) => rows.map(rowOfArray));
    // Asked for ahead: a walk the caller leaves early never reads it, and its failure is not unheard.
    q.catch(() => undefined);
    return q;
  }

  /**
   * Every row in (afterSeq, toSeq] by ranges of seqs, each one index range: seqs are dense, so a
   * range of `pageSize` seqs holds that many rows, and the next ranges are known before this one
   * arrives. {@link AHEAD} ranges are asked for at once, on as many connections, so the server
   * reads them while the caller works on this one.
   */
  async *#ranges(sql: string, filter: RawPageFilter): AsyncIterable<RawEventRow[]> {
    // Never past the head: ranges after it would all be empty, however far `toSeq` is.
    const head = await this.head();
    const to = Math.min(filter.toSeq ?? head, head);
    const size = Math.max(1, Math.min(MAX_PAGE, Math.floor(filter.pageSize ?? PAGE)));
    let next = filter.afterSeq ?? 0;
    const ahead: Promise<RawEventRow[]>[] = [];
    const ask = (): void => {
      while (ahead.length < AHEAD && next < to) {
        ahead.push(this.#page(sql, [next, Math.min(to, next + size)]));
        next += size;
      }
    };
    ask();
    for (let q = ahead.shift(); q !== undefined; q = ahead.shift()) {
      const rows = await q;
      ask();
      if (rows.length > 0) yield rows;
    }
  }

  /** Rows in seq order by keyset (a page starts after the last row of the one before): for filtered walks. */
  async *#walk(sql: string, filter: RawPageFilter, values: (after: number, to: number, size: number) => unknown[]): AsyncIterable<RawEventRow[]> {
    const to = filter.toSeq ?? await this.head();
    const size = Math.max(1, Math.min(MAX_PAGE, Math.floor(filter.pageSize ?? PAGE)));
    let after = filter.afterSeq ?? 0;
    let next = after < to ? this.#page(sql, values(after, to, size)) : null;
    while (next !== null) {
      const rows = await next;
      const last = rows[rows.length - 1];
      if (last === undefined) return;
      after = last.seq;
      next = rows.length === size && after < to ? this.#page(sql, values(after, to, size)) : null;
      yield rows;
    }
  }

  last(stream: string): Promise<KnownEvent | null>;
  last<T extends EventTypeName>(stream: string, type: T): Promise<EventOf<T> | null>;
  async last(stream: string, type?: EventTypeName): Promise<KnownEvent | null> {
    const sql = type === undefined
      ? `SELECT ${RAW_COLUMNS} FROM events WHERE stream = $1 ORDER BY version DESC LIMIT 1`
      : `SELECT ${RAW_COLUMNS} FROM events WHERE stream = $1 AND type = $2${UNINDEXED_TYPES.has(type) ? "" : ` AND ${STREAM_TYPE_INDEXED}`} ORDER BY version DESC LIMIT 1`;
    const r = await this.#db.row<RawEventRow>("reading the log", sql, type === undefined ? [stream] : [stream, type]);
    return r === undefined ? null : eventOfRow(this.registry, r);
  }

  async get(seq: number): Promise<KnownEvent | null> {
    const r = await this.#rawRow(seq);
    return r === undefined ? null : eventOfRow(this.registry, r);
  }

  async #rawRow(seq: number): Promise<RawEventRow | undefined> {
    return this.#db.row<RawEventRow>("reading the log", `SELECT ${RAW_COLUMNS} FROM events WHERE seq = $1`, [seq]);
  }

  async version(stream: string): Promise<number> {
    return (await this.#db.row<{ v: number }>("reading a stream's version", "SELECT coalesce(max(version), 0) AS v FROM events WHERE stream = $1", [stream]))?.v ?? 0;
  }

  async versionsBetween(stream: string, afterSeq?: number, toSeq?: number): Promise<{ readonly from: number; readonly to: number }> {
    const values: unknown[] = [stream];
    const after = (seq: number): string => { values.push(seq); return `events_version_after($1, $${values.length})`; };
    const from = afterSeq === undefined ? "1" : after(afterSeq);
    const to = toSeq === undefined ? "(SELECT coalesce(max(version), 0) FROM events WHERE stream = $1)" : `${after(toSeq)} - 1`;
    const r = await this.#db.row<{ from: number; to: number }>("reading a stream's versions", `SELECT ${from} AS "from", ${to} AS "to"`, values);
    return { from: r?.from ?? 1, to: r?.to ?? 0 };
  }

  async head(): Promise<number> {
    return (await this.headPoint()).seq;
  }

  async headPoint(): Promise<ChainPoint> {
    const r = await this.#db.row<ChainPoint>("reading the head", "SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1");
    if (r !== undefined) this.#saw(r.seq);
    return r ?? { seq: 0, hash: GENESIS_HASH };
  }

  async verify(from?: ChainPoint): Promise<VerifyResult> {
    return (await this.#verifyWalk(from)).result;
  }

  /** Walks the chain up to the head as it was when the walk started. */
  async #verifyWalk(from?: ChainPoint): Promise<{ result: VerifyResult; point: ChainPoint | null }> {
    const walk = walkFrom(from, from !== undefined && from.seq > 0 ? await this.#rawRow(from.seq) : undefined);
    if (!(walk instanceof ChainWalk)) return { result: walk, point: null };
    for await (const rows of this.rawPages({ afterSeq: walk.next - 1, pageSize: 5_000 })) {
      for (const r of rows) {
        const broke: ChainBreak | null = walk.step(r);
        if (broke !== null) return { result: broke, point: null };
      }
    }
    return { result: walk.result(), point: walk.count > 0 ? walk.point : null };
  }

  async verifySinceCheckpoint(): Promise<VerifyResult> {
    const cp = await this.verifiedPoint();
    const { result, point } = await this.#verifyWalk(cp ?? undefined);
    if (point !== null) {
      // Forward only: two processes verifying at once never move the point back.
      await this.#db.rows("moving the verified point",
        "INSERT INTO chain_checkpoint (id, seq, hash) VALUES (1, $1, $2) ON CONFLICT (id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash WHERE chain_checkpoint.seq <= excluded.seq",
        [point.seq, point.hash]);
    }
    return result;
  }

  async verifiedPoint(): Promise<ChainPoint | null> {
    return (await this.#db.row<ChainPoint>("reading the verified point", "SELECT seq, hash FROM chain_checkpoint WHERE id = 1")) ?? null;
  }

  async checkGuards(): Promise<GuardsResult> {
    const rows = await this.#db.rows<{ name: string; tgtype: number; enabled: string; unconditional: boolean; fn: string; src: string }>("reading the guards", `
      SELECT t.tgname AS name, t.tgtype::int AS tgtype, t.tgenabled::text AS enabled, t.tgqual IS NULL AS unconditional, p.proname AS fn, p.prosrc AS src
      FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid
      WHERE t.tgrelid = to_regclass('events') AND NOT t.tgisinternal`);
    const body = normalizeSql(REFUSE_BODY);
    const holds = (name: GuardName): boolean => rows.some((r) =>
      r.name === name && r.tgtype === GUARDS[name].tgtype && (r.enabled === "O" || r.enabled === "A") && r.unconditional &&
      r.fn === "events_refuse_change" && normalizeSql(r.src) === body);
    const missing = (Object.keys(GUARDS) as GuardName[]).filter((n) => !holds(n));
    return { ok: missing.length === 0, missing };
  }

  async restoreGuards(): Promise<string[]> {
    const { missing } = await this.checkGuards();
    if (missing.length === 0) return [];
    // DDL on events needs the role that owns it: the application's role is refused (`forbidden`).
    await this.#db.exec("restoring the guards", `BEGIN; ${missing.map((n) => guardDdl(n as GuardName)).join("; ")}; COMMIT`);
    return [...missing];
  }

  async importRaw(rows: readonly RawEventRow[]): Promise<ChainPoint> {
    const bad = rows.findIndex((r) => !wellFormed(r));
    if (bad >= 0) throw new StoreError(StoreErrorCode.InvalidEvent, `row ${bad} of the import is not a stored event's row (seq ${String(rows[bad]?.seq)})`);
    const point = await this.#db.locked("importing rows", "SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1", async (results) => {
      const head = headOf(results[0]);
      const first = rows[0];
      if (first === undefined) return { text: "", result: head };
      if (head.seq > 0 && (first.seq !== head.seq + 1 || first.prevHash !== head.hash)) {
        throw new StoreError(StoreErrorCode.NotEmpty, `the log holds ${head.seq} events and the rows imported (from seq ${first.seq}) do not continue it`);
      }
      const walk = new ChainWalk({ seq: head.seq + 1, prevHash: head.hash });
      for (const r of rows) {
        const broke = walk.step(r);
        if (broke !== null) throw new StoreError(StoreErrorCode.Tampered, `import refused, nothing written: seq ${broke.seq}: ${broke.reason}`);
      }
      const last = walk.point;
      return { ...writeRows(rows), result: last, landed: landedAt(first.seq, first.hash) };
    });
    return point;
  }

  subscribe(fn: EventListener): () => void {
    if (this.#db.closed) throw new StoreError(StoreErrorCode.Closed, "the event log is closed");
    return this.#follower.subscribe(fn, this.#known);
  }

  announce(events: readonly KnownEvent[]): void {
    this.#follower.committed(events);
  }

  /** A connection of its own listening on the log's channel. */
  async #listen(onNotify: (seq: number) => void): Promise<pg.Client> {
    const client = new pg.Client(this.#db.config("openfief-listen"));
    client.on("error", () => undefined);
    try {
      await client.connect();
      client.on("notification", (msg) => {
        const seq = Number(msg.payload);
        if (msg.channel === CHANNEL && Number.isSafeInteger(seq)) onNotify(seq);
      });
      await client.query(`LISTEN ${CHANNEL}`);
      return client;
    } catch (err) {
      await client.end().catch(() => undefined);
      throw storeError(err, "listening for appends", this.#db.secrets);
    }
  }

  async close(): Promise<void> {
    if (this.#db.closed) return;
    await this.#follower.close();
    await this.#db.close();
  }
}
