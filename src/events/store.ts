/**
 * The SQLite adapter of the event log: one file, one append-only `events` table with a hash chain.
 *
 * The port is asynchronous (PostgreSQL is); here every method answers from better-sqlite3's
 * synchronous prepared statements (one BEGIN IMMEDIATE per batch, one hash per row, schemas
 * compiled once), so a call costs a resolved promise and nothing per event. Whoever opens the
 * file runs the migrations first; kysely is loaded only to run them.
 */
import Database from "better-sqlite3";
import { MIGRATION_NAMES } from "../../migrations/names.js";
import { canonicalJson as canonicalize } from "./canonical.js";
import { catalog } from "./catalog.js";
import { Checkpointer } from "./checkpointer.js";
import type { EventOf, EventTypeName, KnownEvent } from "./catalog.js";
import { StoreError, StoreErrorCode } from "./errors.js";
import { EntryWriter, GENESIS_HASH, chainHash } from "./hash.js";
import { BatchPreparer } from "./prepare.js";
import type { Prepared } from "./prepare.js";
import { ChainWalk } from "./chain.js";
import type { RawEventRow } from "./chain.js";
import type { AppendOptions, EventListener, EventLog, EventLookups, LogTree, PageFilter, RawPageFilter } from "./port.js";
import { StoredTree } from "./tree.js";
import type { LeafSink } from "./tree.js";
import type { EventRegistry, EventType } from "./registry.js";
import { eventOfRow } from "./rows.js";
import { EVENT_COLUMNS, toStoredEvent } from "./sqlite/rows.js";
import type { EventRow } from "./sqlite/rows.js";
import { SqliteLookups } from "./sqlite/lookups.js";
import { sqliteTables } from "./sqlite/tables.js";
import { retryingBusy } from "./sqlite/busy.js";
import { STREAM_TYPE_INDEXED, UNINDEXED_TYPES } from "./streams.js";
import type { LogTables } from "./tables.js";
import type { ChainPoint, GuardsResult, NewEvent, ReadFilter, VerifyResult } from "./types.js";

export type { ChainPoint, GuardsResult, NewEvent, StoredEvent, ReadFilter, VerifyResult } from "./types.js";
export type { AppendOptions, EventListener, EventLog } from "./port.js";
export { StoreError, StoreErrorCode } from "./errors.js";

/** Options of {@link openStore}. */
export interface StoreOptions {
  /** Path of the SQLite file (created when missing). */
  readonly file: string;
  /** The clock stamped on appended events; defaults to the system clock. */
  readonly clock?: () => Date;
  /** The event types accepted; defaults to the control plane's catalog. */
  readonly registry?: EventRegistry;
  /**
   * Every commit of this connection on disk before it returns (`synchronous=FULL`), not only the
   * durable ones: for a connection that only commits batches someone waits on (the egress writer's).
   */
  readonly durable?: boolean;
}

/** Events per page of {@link EventLog.pages} when the caller names no size. */
const PAGE_SIZE = 1_000;
/** The columns a fold reads: no hashes (`prevHash`/`hash` are "" in what it gets). */
const SCAN_COLUMNS = "seq, stream, version, type, schema_version, time, actor, caused_by, data";
type ScanRow = [seq: number, stream: string, version: number, type: string, schemaVersion: number, time: string, actor: string, causedBy: number | null, data: string];
/** The columns of `events` as a {@link RawEventRow} names them. */
const RAW_COLUMNS = "seq, stream, version, type, schema_version AS schemaVersion, time, actor, caused_by AS causedBy, data, prev_hash AS prevHash, hash";

/** Opens (creating and migrating when needed) the log in `opts.file`. */
export async function openStore(opts: StoreOptions): Promise<EventLog> {
  return openSqliteLog(opts);
}

/** {@link openStore}, typed as the adapter (for the SQLite-only parts of this room). */
export async function openSqliteLog(opts: StoreOptions): Promise<SqliteEventLog> {
  const database = new Database(opts.file);
  database.pragma("journal_mode = WAL");
  database.pragma(opts.durable === true ? "synchronous = FULL" : "synchronous = NORMAL");
  database.pragma("foreign_keys = ON");
  database.pragma("busy_timeout = 5000");
  // 8 MiB of page cache and no memory-mapping (docs/adr/0148). At the end of a commit whose index
  // pages split, SQLite walks its whole cache (a split renumbers pages through a number past the
  // file's end), so every cached page costs every such commit, while the pages that stay hot for
  // appends (each stream's last index pages) are few. And once the indexes spread over hundreds
  // of megabytes, reading the pages an append changes through a mapping of the file cost the
  // appending thread more (page faults, page-table work) than reading them with read().
  database.pragma("cache_size = -8192");
  database.pragma("mmap_size = 0");
  // Appends never copy the WAL back into the file: the store's checkpoint thread does (checkpointer.ts).
  database.pragma("wal_autocheckpoint = 0");
  try {
    if (!migrated(database)) await migrate(database);
  } catch (err) {
    database.close();
    throw err;
  }
  return new SqliteEventLog(opts.file, database, opts.registry ?? catalog, opts.clock ?? (() => new Date()), opts.durable === true);
}

/** Runs the migrations; kysely (and the migrations, which use it) load only when there is something to migrate. */
async function migrate(database: Database.Database): Promise<void> {
  const { Kysely, Migrator, SqliteDialect } = await import("kysely");
  const { migrationProvider } = await import("../../migrations/index.js");
  // kysely's dialect closes the handle it was given on destroy: lend it one that does not.
  const lent = new Proxy(database, {
    get(t, p) {
      if (p === "close") return () => undefined;
      const v = Reflect.get(t, p, t) as unknown;
      return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(t) : v;
    },
  });
  const db = new Kysely<unknown>({ dialect: new SqliteDialect({ database: lent }) });
  try {
    const { error, results } = await new Migrator({ db, provider: migrationProvider }).migrateToLatest();
    if (error !== undefined) {
      const failed = results?.find((r) => r.status === "Error")?.migrationName ?? "?";
      throw new StoreError(StoreErrorCode.Migration, `migration ${failed} failed: ${error instanceof Error ? error.message : String(error)}`);
    }
  } finally {
    await db.destroy();
  }
}

/** Whether every migration this build knows was applied to the database (kysely's own bookkeeping table). */
function migrated(database: Database.Database): boolean {
  const table = database.prepare<[], { n: number }>("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name = 'kysely_migration'").get();
  if (table === undefined || table.n === 0) return false;
  const applied = new Set(database.prepare<[], { name: string }>("SELECT name FROM kysely_migration").all().map((r) => r.name));
  return MIGRATION_NAMES.every((n) => applied.has(n));
}

/**
 * The log over one SQLite connection. Its public methods are the port's; the synchronous ones
 * below them (`…Now`, `database`, `statement`) are for this room's SQLite parts only (the lookups,
 * the tables beside the log, the egress writer), which the room's door does not export.
 */
export class SqliteEventLog implements EventLog {
  readonly kind = "sqlite" as const;
  readonly lookups: EventLookups;
  readonly #clock: () => Date;
  readonly #listeners = new Set<EventListener>();
  readonly #stmts;
  readonly #cache = new Map<string, Database.Statement>();
  /** Validates and canonicalises batches, as the PostgreSQL log does (one set of rules and messages). */
  readonly #preparer: BatchPreparer;
  /** The append transaction, made once (run with `.immediate`: the write lock is taken before the head is read). */
  readonly #appendTx: Database.Transaction<(batch: readonly Prepared[], expected: Readonly<Record<string, number>> | undefined) => KnownEvent[]>;
  /** The observe transaction, made once too (also run with `.immediate`). */
  readonly #observeTx: Database.Transaction<(prepared: Prepared) => KnownEvent[]>;
  readonly #checkpointer: Checkpointer;
  /** Whether every commit of this connection is durable ({@link StoreOptions.durable}). */
  readonly #alwaysDurable: boolean;
  #tables: LogTables | null = null;
  #tree: LogTree | null = null;
  /** Told the leaf hashes of each committed append made here, once the tree asked (docs/adr/0141). */
  #leafSink: LeafSink | null = null;
  /**
   * The rows the last {@link #write} made, until its commit is known: their tree entries and chain
   * hashes (views of {@link #entries}, valid until the next write, which replaces this too).
   */
  #written: { first: number; count: number; entries: Buffer; ends: Uint32Array; hashes: Buffer; last: string } | null = null;
  readonly #entries = new EntryWriter();
  /** Whether SQLite checkpoints inside commits again (no checkpoint thread could run). */
  #inlineCheckpoints = false;
  #closed = false;
  /** Durable work in flight on this connection ({@link durably} calls and durable appends). */
  #durable = 0;

  constructor(
    readonly location: string,
    readonly database: Database.Database,
    readonly registry: EventRegistry,
    clock: () => Date,
    alwaysDurable = false,
  ) {
    this.#clock = clock;
    this.#preparer = new BatchPreparer(registry);
    this.#alwaysDurable = alwaysDurable;
    this.#checkpointer = new Checkpointer(location);
    this.#stmts = {
      head: database.prepare<[], { seq: number; hash: string }>("SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1"),
      version: database.prepare<[string], { v: number | null }>("SELECT max(version) AS v FROM events WHERE stream = ?"),
      // No row when the log is empty (every stream is then at version 0).
      headAndVersion: database.prepare<[string], { seq: number; hash: string; v: number | null }>(
        "SELECT seq, hash, (SELECT max(version) FROM events WHERE stream = ?) AS v FROM events ORDER BY seq DESC LIMIT 1",
      ),
      // The streams as a JSON array: one statement for every stream of a batch.
      versions: database.prepare<[string], { stream: string; v: number | null }>(
        "SELECT j.value AS stream, (SELECT max(version) FROM events WHERE stream = j.value) AS v FROM json_each(?) AS j",
      ),
      insert: database.prepare(`INSERT INTO events (${EVENT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
      last: database.prepare<[string], EventRow>(`SELECT ${EVENT_COLUMNS} FROM events WHERE stream = ? ORDER BY version DESC LIMIT 1`),
      lastOfType: database.prepare<[string, string], EventRow>(`SELECT ${EVENT_COLUMNS} FROM events WHERE stream = ? AND type = ? AND ${STREAM_TYPE_INDEXED} ORDER BY version DESC LIMIT 1`),
      // A type with streams of its own: the latest of it is the stream's latest.
      lastOfUnindexed: database.prepare<[string, string], EventRow>(`SELECT ${EVENT_COLUMNS} FROM events WHERE stream = ? AND type = ? ORDER BY version DESC LIMIT 1`),
      get: database.prepare<[number], EventRow>(`SELECT ${EVENT_COLUMNS} FROM events WHERE seq = ?`),
      seqOfVersion: database.prepare<[string, number], { seq: number }>("SELECT seq FROM events WHERE stream = ? AND version = ?"),
      verifiedPoint: database.prepare<[], ChainPoint>("SELECT seq, hash FROM chain_checkpoint WHERE id = 1"),
      setVerifiedPoint: database.prepare<[number, string]>("INSERT INTO chain_checkpoint (id, seq, hash) VALUES (1, ?, ?) ON CONFLICT (id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash"),
    };
    this.#appendTx = database.transaction((batch: readonly Prepared[], expected: Readonly<Record<string, number>> | undefined) => this.#write(batch, expected));
    this.#observeTx = database.transaction((prepared: Prepared) => this.#writeUnlessSame(prepared));
    this.lookups = new SqliteLookups(this);
  }

  get tables(): LogTables {
    this.#open();
    this.#tables ??= sqliteTables(this);
    return this.#tables;
  }

  get tree(): LogTree {
    this.#open();
    this.#tree ??= new StoredTree(this, () => this.tables.tree, (sink) => { this.#leafSink = sink; });
    return this.#tree;
  }

  async append(batch: readonly NewEvent[], opts: AppendOptions = {}): Promise<KnownEvent[]> {
    return this.appendNow(batch, opts);
  }

  /** {@link append}, answered before it returns. */
  appendNow(batch: readonly NewEvent[], opts: AppendOptions = {}): KnownEvent[] {
    this.#open();
    const prepared = this.#preparer.prepare(batch);
    // The listeners are told inside a durable scope too: what they see is how the commit was made.
    return this.#durableIf(opts.durable === true, () => {
      const stored = retryingBusy(() => this.#appendTx.immediate(prepared, opts.expected), () => this.#busyTimeout());
      this.#feedLeaves();
      this.#committed(stored.length);
      this.#notify(stored);
      return stored;
    });
  }

  /**
   * Appends inside a transaction the caller holds (a savepoint of it): nothing is told to the
   * listeners or the checkpoint thread, which the caller does with {@link afterCommit} once its
   * transaction committed.
   */
  appendInTransaction(batch: readonly NewEvent[]): KnownEvent[] {
    this.#open();
    // Its leaves go to the tree in afterCommit, once the caller's transaction committed.
    return this.#appendTx(this.#preparer.prepare(batch), undefined);
  }

  /** Tells the checkpoint thread and the listeners of events a caller's transaction committed. */
  afterCommit(events: readonly KnownEvent[]): void {
    if (events.length === 0) return;
    // The leaves of exactly these rows (the same seqs; the same last hash, which the chain ties to every row before it), when this connection wrote them last.
    const w = this.#written;
    if (w !== null && w.first === events[0]?.seq && w.count === events.length && events[events.length - 1]?.hash === w.last) this.#feedLeaves();
    else this.#written = null;
    this.#committed(events.length);
    this.#notify(events);
  }

  /**
   * Every commit made while `fn` runs is synced before it returns (`synchronous=FULL`), its own
   * and, because the setting is the connection's, any other caller's commit on this connection
   * meanwhile: a durable write costs a sync, and an unrelated append that shares its moment is
   * made durable too, never the reverse (docs/adr/0096, 0120).
   */
  async durably<T>(fn: () => Promise<T>): Promise<T> {
    this.#open();
    this.#enterDurable();
    try {
      return await fn();
    } finally {
      this.#leaveDurable();
    }
  }

  async observe(event: NewEvent, opts: Pick<AppendOptions, "durable"> = {}): Promise<KnownEvent | null> {
    this.#open();
    const [prepared] = this.#preparer.prepare([event]) as [Prepared];
    return this.#durableIf(opts.durable === true, () => {
      const stored = retryingBusy(() => this.#observeTx.immediate(prepared), () => this.#busyTimeout());
      if (stored.length > 0) this.#feedLeaves();
      if (stored.length > 0) this.#committed(stored.length);
      this.#notify(stored);
      return stored[0] ?? null;
    });
  }

  /** The connection's busy timeout (ms): how long an append may wait for the write lock. */
  #busyTimeout(): number {
    return Number(this.database.pragma("busy_timeout", { simple: true }));
  }

  #durableIf<T>(durable: boolean, fn: () => T): T {
    if (!durable) return fn();
    this.#enterDurable();
    try {
      return fn();
    } finally {
      this.#leaveDurable();
    }
  }

  #enterDurable(): void {
    if (this.#durable++ === 0 && !this.#alwaysDurable) this.database.pragma("synchronous = FULL");
  }

  #leaveDurable(): void {
    if (--this.#durable === 0 && !this.#alwaysDurable && !this.#closed) this.database.pragma("synchronous = NORMAL");
  }

  /** Runs inside the observe transaction: writes `prepared` unless its group's latest event says the same. */
  #writeUnlessSame(prepared: Prepared): KnownEvent[] {
    const def = this.registry.get(prepared.type) as EventType;
    let latest: EventRow | undefined;
    for (const t of def.observeGroup) {
      const row = this.#lastOfType(prepared.stream, t);
      if (row !== undefined && (latest === undefined || row.version > latest.version)) latest = row;
    }
    if (latest !== undefined && latest.type === prepared.type) {
      const same = latest.schema_version === prepared.schemaVersion
        ? latest.data === prepared.data
        : canonicalize(def.upcast(latest.schema_version, JSON.parse(latest.data))) === prepared.data;
      if (same) return [];
    }
    return this.#write([prepared], undefined);
  }

  read(filter?: ReadFilter): Promise<KnownEvent[]>;
  read<T extends EventTypeName>(filter: ReadFilter & { readonly type: T | readonly T[] }): Promise<EventOf<T>[]>;
  async read(filter: ReadFilter = {}): Promise<KnownEvent[]> {
    return this.readNow(filter);
  }

  /** {@link read}, answered before it returns. */
  readNow(filter: ReadFilter = {}): KnownEvent[] {
    this.#open();
    const q = this.#whereOf(filter);
    if (q === null) return [];
    let sql = `SELECT ${EVENT_COLUMNS} FROM events`;
    if (q.where.length > 0) sql += ` WHERE ${q.where.join(" AND ")}`;
    sql += ` ORDER BY ${q.order}`;
    if (filter.limit !== undefined) { sql += " LIMIT ?"; q.args.push(Math.max(0, Math.floor(filter.limit))); }
    return (this.statement<EventRow>(sql).all(...q.args)).map((r) => this.toEvent(r));
  }

  async *pages(filter: PageFilter): AsyncIterable<readonly KnownEvent[]> {
    this.#open();
    const toSeq = filter.toSeq ?? this.#headSeq();
    const size = Math.max(1, Math.floor(filter.pageSize ?? PAGE_SIZE));
    const types = filter.types;
    if (types?.length === 0) return;
    for (let cursor = filter.afterSeq ?? 0; cursor < toSeq;) {
      const page = filter.hashes === false
        ? this.#scan(cursor, toSeq, types, size)
        : this.readNow({ afterSeq: cursor, toSeq, limit: size, ...(types === undefined ? {} : { type: types }) });
      const last = page[page.length - 1];
      if (last === undefined) return;
      yield page;
      if (page.length < size) return;
      cursor = last.seq;
    }
  }

  /**
   * A page of events for folding: through the upcasters like {@link read}, but from raw rows and
   * without the hash columns, which folds never use. Rebuild speed is dominated by this read.
   */
  #scan(afterSeq: number, toSeq: number, types: readonly string[] | undefined, limit: number): KnownEvent[] {
    const typed = types === undefined ? "" : ` AND type IN (${types.map(() => "?").join(", ")})`;
    const sql = `SELECT ${SCAN_COLUMNS} FROM events WHERE seq > ? AND seq <= ?${typed} ORDER BY seq LIMIT ?`;
    let stmt = this.#cache.get(`raw:${sql}`);
    if (stmt === undefined) {
      stmt = this.database.prepare(sql).raw();
      if (this.#cache.size < 256) this.#cache.set(`raw:${sql}`, stmt);
    }
    const rows = stmt.all(afterSeq, toSeq, ...(types ?? []), limit) as ScanRow[];
    const registry = this.registry;
    return rows.map((r) => {
      const def = registry.get(r[3]);
      const raw = JSON.parse(r[8]) as unknown;
      // A row adapter: every row was validated against its type's schema when it was appended.
      return {
        seq: r[0], stream: r[1], version: r[2], type: r[3], schemaVersion: r[4], time: r[5], actor: r[6], causedBy: r[7],
        data: def === undefined ? raw : def.upcast(r[4], raw), prevHash: "", hash: "",
      } as KnownEvent;
    });
  }

  async *rawPages(filter: RawPageFilter = {}): AsyncIterable<readonly RawEventRow[]> {
    this.#open();
    const to = filter.toSeq ?? this.#headSeq();
    const size = Math.max(1, Math.floor(filter.pageSize ?? PAGE_SIZE));
    const stmt = this.statement<RawEventRow>(`SELECT ${RAW_COLUMNS} FROM events WHERE seq > ? AND seq <= ? ORDER BY seq LIMIT ?`);
    for (let after = filter.afterSeq ?? 0; after < to;) {
      const rows = stmt.all(after, to, size);
      const last = rows[rows.length - 1];
      if (last === undefined) return;
      yield rows;
      if (rows.length < size) return;
      after = last.seq;
    }
  }

  async importRaw(rows: readonly RawEventRow[]): Promise<ChainPoint> {
    this.#open();
    const insert = this.#stmts.insert;
    const point = this.database.transaction(() => {
      const h = this.#stmts.head.get();
      const head: ChainPoint = h === undefined ? { seq: 0, hash: GENESIS_HASH } : { seq: h.seq, hash: h.hash };
      const first = rows[0];
      if (first === undefined) return head;
      if (head.seq > 0 && (first.seq !== head.seq + 1 || first.prevHash !== head.hash)) {
        throw new StoreError(StoreErrorCode.NotEmpty, `the log holds ${head.seq} events and the rows imported (from seq ${first.seq}) do not continue it`);
      }
      const walk = new ChainWalk({ seq: head.seq + 1, prevHash: head.hash });
      for (const r of rows) {
        const broke = walk.step(r);
        if (broke !== null) throw new StoreError(StoreErrorCode.Tampered, `import refused, nothing written: seq ${broke.seq}: ${broke.reason}`);
        insert.run(r.seq, r.stream, r.version, r.type, r.schemaVersion, r.time, r.actor, r.causedBy, r.data, r.prevHash, r.hash);
      }
      return walk.point;
    }).immediate();
    this.afterCommit(rows.map((r) => eventOfRow(this.registry, r)));
    return point;
  }

  /** A prepared statement for `sql`, made once per connection (up to a few hundred texts). */
  statement<R = unknown>(sql: string): Database.Statement<unknown[], R> {
    let stmt = this.#cache.get(sql);
    if (stmt === undefined) {
      stmt = this.database.prepare(sql);
      if (this.#cache.size < 256) this.#cache.set(sql, stmt);
    }
    return stmt as Database.Statement<unknown[], R>;
  }

  /** The WHERE terms and the order of a read; null when nothing can match. */
  #whereOf(filter: ReadFilter): { where: string[]; args: (string | number)[]; order: string } | null {
    const where: string[] = [];
    const args: (string | number)[] = [];
    const term = (sql: string, ...values: (string | number)[]): void => { where.push(sql); args.push(...values); };
    if (filter.stream !== undefined) {
      term("stream = ?", filter.stream);
      // Within a stream versions rise with seqs, so a stretch of seqs is a stretch of versions:
      // read in the stream's index order rather than sort the whole stream by seq.
      if (filter.afterSeq !== undefined || filter.toSeq !== undefined) {
        const { from, to } = this.versionsBetweenNow(filter.stream, filter.afterSeq, filter.toSeq);
        if (from > to) return null;
        term("version >= ? AND version <= ?", from, to);
      }
    } else {
      if (filter.afterSeq !== undefined) term("seq > ?", filter.afterSeq);
      if (filter.toSeq !== undefined) term("seq <= ?", filter.toSeq);
    }
    if (filter.streamPrefix !== undefined) term("stream >= ? AND stream < ?", filter.streamPrefix, filter.streamPrefix + "\u{10FFFF}");
    if (filter.type !== undefined) {
      const types = typeof filter.type === "string" ? [filter.type] : filter.type;
      if (types.length === 0) return null;
      // One type as an equality, so a stream's (stream, type, version) index serves it in order.
      if (types.length === 1) term("type = ?", types[0] as string);
      else term(`type IN (${types.map(() => "?").join(", ")})`, ...types);
      if (filter.stream !== undefined && types.every((t) => !UNINDEXED_TYPES.has(t))) term(STREAM_TYPE_INDEXED);
    }
    if (filter.since !== undefined) term("time >= ?", filter.since.toISOString());
    if (filter.until !== undefined) term("time <= ?", filter.until.toISOString());
    return { where, args, order: filter.stream === undefined ? "seq" : "version" };
  }

  async versionsBetween(stream: string, afterSeq?: number, toSeq?: number): Promise<{ from: number; to: number }> {
    return this.versionsBetweenNow(stream, afterSeq, toSeq);
  }

  /**
   * {@link versionsBetween}, answered before it returns: a stream's seqs rise with its versions,
   * so this is a bisection of point lookups, and a stretch of seqs can be read in the
   * (stream, version) index's order.
   */
  versionsBetweenNow(stream: string, afterSeq?: number, toSeq?: number): { from: number; to: number } {
    this.#open();
    const last = this.#stmts.version.get(stream)?.v ?? 0;
    // The first version whose seq is above `seq` (last + 1 when none is).
    const firstAbove = (seq: number): number => {
      let lo = 1;
      let hi = last + 1;
      while (lo < hi) {
        const mid = Math.floor((lo + hi) / 2);
        if ((this.#stmts.seqOfVersion.get(stream, mid)?.seq ?? Number.POSITIVE_INFINITY) > seq) hi = mid;
        else lo = mid + 1;
      }
      return lo;
    };
    return { from: afterSeq === undefined ? 1 : firstAbove(afterSeq), to: toSeq === undefined ? last : firstAbove(toSeq) - 1 };
  }

  last(stream: string): Promise<KnownEvent | null>;
  last<T extends EventTypeName>(stream: string, type: T): Promise<EventOf<T> | null>;
  async last(stream: string, type?: EventTypeName): Promise<KnownEvent | null> {
    this.#open();
    const row = type === undefined ? this.#stmts.last.get(stream) : this.#lastOfType(stream, type);
    return row === undefined ? null : this.toEvent(row);
  }

  #lastOfType(stream: string, type: string): EventRow | undefined {
    return (UNINDEXED_TYPES.has(type) ? this.#stmts.lastOfUnindexed : this.#stmts.lastOfType).get(stream, type);
  }

  async get(seq: number): Promise<KnownEvent | null> {
    return this.getNow(seq);
  }

  /** {@link get}, answered before it returns. */
  getNow(seq: number): KnownEvent | null {
    this.#open();
    const row = this.#stmts.get.get(seq);
    return row === undefined ? null : this.toEvent(row);
  }

  async version(stream: string): Promise<number> {
    this.#open();
    return this.#stmts.version.get(stream)?.v ?? 0;
  }

  async head(): Promise<number> {
    this.#open();
    return this.#headSeq();
  }

  #headSeq(): number {
    return this.#stmts.head.get()?.seq ?? 0;
  }

  async verify(from?: ChainPoint): Promise<VerifyResult> {
    return this.#verify(from);
  }

  #verify(from?: ChainPoint): VerifyResult {
    this.#open();
    let prev = GENESIS_HASH;
    let expectedSeq = 1;
    let count = 0;
    if (from !== undefined && from.seq > 0) {
      const row = this.#stmts.get.get(from.seq);
      if (row === undefined) return { ok: false, seq: from.seq, reason: `the verified event ${from.seq} is gone (a row was deleted)` };
      if (row.hash !== from.hash) return { ok: false, seq: from.seq, reason: "the hash of an already verified event changed (the chain was rewritten)" };
      // The verified row itself is hashed again (an edit to it shows), then every row after it.
      prev = row.prev_hash;
      expectedSeq = from.seq;
      count = from.seq - 1;
    }
    const it = this.database.prepare<[number], EventRow>(`SELECT ${EVENT_COLUMNS} FROM events WHERE seq >= ? ORDER BY seq`).iterate(expectedSeq);
    for (const r of it) {
      if (r.seq !== expectedSeq) {
        it.return?.();
        return { ok: false, seq: r.seq, reason: `sequence gap: expected seq ${expectedSeq}, found ${r.seq} (a row was deleted)` };
      }
      if (r.prev_hash !== prev) {
        it.return?.();
        return { ok: false, seq: r.seq, reason: `prev_hash does not match the hash of the row before` };
      }
      const h = chainHash(r.prev_hash, r.seq, r.stream, r.version, r.type, r.schema_version, r.time, r.actor, r.caused_by, r.data);
      if (h !== r.hash) {
        it.return?.();
        return { ok: false, seq: r.seq, reason: `hash does not match the row's fields (the row was edited)` };
      }
      prev = r.hash;
      expectedSeq++;
      count++;
    }
    return { ok: true, count };
  }

  async verifySinceCheckpoint(): Promise<VerifyResult> {
    this.#open();
    const cp = this.#stmts.verifiedPoint.get();
    const result = this.#verify(cp);
    // The walk verified seqs 1..count (contiguous); the point is its last row, not a head that moved since.
    const last = result.ok && result.count > 0 ? this.#stmts.get.get(result.count) : undefined;
    if (last !== undefined) this.#stmts.setVerifiedPoint.run(last.seq, last.hash);
    return result;
  }

  async verifiedPoint(): Promise<ChainPoint | null> {
    this.#open();
    return this.#stmts.verifiedPoint.get() ?? null;
  }

  async headPoint(): Promise<ChainPoint> {
    this.#open();
    const h = this.#stmts.head.get();
    return h === undefined ? { seq: 0, hash: GENESIS_HASH } : { seq: h.seq, hash: h.hash };
  }

  async checkGuards(): Promise<GuardsResult> {
    return this.#checkGuards();
  }

  #checkGuards(): GuardsResult {
    this.#open();
    const rows = this.database.prepare<[], { name: string; sql: string | null }>("SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'events'").all();
    const have = new Map(rows.map((r) => [r.name, normalizeSql(r.sql ?? "")]));
    const missing = Object.entries(GUARDS).filter(([name, ddl]) => have.get(name) !== normalizeSql(ddl)).map(([name]) => name);
    return { ok: missing.length === 0, missing };
  }

  async restoreGuards(): Promise<string[]> {
    const { missing } = this.#checkGuards();
    const tx = this.database.transaction(() => {
      for (const name of missing) {
        this.database.exec(`DROP TRIGGER IF EXISTS ${name}`);
        this.database.exec(GUARDS[name as keyof typeof GUARDS]);
      }
    });
    tx.immediate();
    return [...missing];
  }

  subscribe(fn: EventListener): () => void {
    this.#listeners.add(fn);
    return () => { this.#listeners.delete(fn); };
  }

  announce(events: readonly KnownEvent[]): void {
    this.#notify(events);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#listeners.clear();
    await this.#checkpointer.close();
    this.database.close();
  }

  /** Throws `closed` once {@link close} was called. */
  #open(): void {
    if (this.#closed) throw new StoreError(StoreErrorCode.Closed, "the event store is closed");
  }

  /** Throws `closed` once {@link close} was called (for this room's SQLite parts). */
  assertOpen(): void {
    this.#open();
  }

  /** Tells the checkpoint thread of a commit; without one, hands checkpoints back to SQLite's commits. */
  #committed(events: number): void {
    if (this.#checkpointer.committed(events) || this.#inlineCheckpoints) return;
    this.#inlineCheckpoints = true;
    this.database.pragma("wal_autocheckpoint = 1000");
  }

  /** Hands the tree the leaves of the append just committed. */
  #feedLeaves(): void {
    const w = this.#written;
    this.#written = null;
    if (w !== null && this.#leafSink !== null && w.count > 0) this.#leafSink(w.first, w.entries, w.ends, w.hashes);
  }

  #notify(events: readonly KnownEvent[]): void {
    if (events.length === 0) return;
    for (const fn of this.#listeners) {
      try { fn(events); } catch { /* a listener's failure must not undo a committed append */ }
    }
  }

  /**
   * Writes validated events; runs inside the append transaction, which holds the write lock
   * (BEGIN IMMEDIATE), so the chain head and the stream versions read here are the ones this
   * batch extends, whatever other processes appended before: nothing is carried over in memory
   * from an earlier transaction.
   */
  #write(batch: readonly Prepared[], expected: Readonly<Record<string, number>> | undefined): KnownEvent[] {
    const { head, versions } = this.#readHead(batch, expected);
    let seq = head?.seq ?? 0;
    let prev = head?.hash ?? GENESIS_HASH;
    if (expected !== undefined) {
      for (const [stream, want] of Object.entries(expected)) {
        const actual = versions.get(stream) ?? 0;
        if (actual !== want) {
          throw new StoreError(StoreErrorCode.Conflict, `stream ${stream} is at version ${actual}, expected ${want}: read it again and retry`, {
            conflict: { stream, expected: want, actual },
          });
        }
      }
    }
    const time = this.#clock().toISOString();
    const insert = this.#stmts.insert;
    const out: KnownEvent[] = new Array<KnownEvent>(batch.length);
    const feeding = this.#leafSink !== null;
    this.#entries.clear();
    this.#written = null;
    for (let i = 0; i < batch.length; i++) {
      const e = batch[i] as Prepared;
      seq++;
      const version = (versions.get(e.stream) ?? 0) + 1;
      versions.set(e.stream, version);
      if (e.causedBy !== null && e.causedBy >= seq) {
        throw new StoreError(StoreErrorCode.InvalidCause, `causedBy ${e.causedBy} is not an earlier event than seq ${seq}`);
      }
      const hash = feeding
        ? this.#entries.chainHash(prev, seq, e.stream, version, e.type, e.schemaVersion, time, e.actor, e.causedBy, e.data)
        : chainHash(prev, seq, e.stream, version, e.type, e.schemaVersion, time, e.actor, e.causedBy, e.data);
      try {
        insert.run(seq, e.stream, version, e.type, e.schemaVersion, time, e.actor, e.causedBy, e.data, prev, hash);
      } catch (err) {
        if (err instanceof Error && /FOREIGN KEY/.test(err.message)) {
          throw new StoreError(StoreErrorCode.InvalidCause, `causedBy ${String(e.causedBy)} names no event`);
        }
        throw err;
      }
      // The registry validated e.value against its type's schema, so the row is that type's event.
      out[i] = { seq, stream: e.stream, version, type: e.type, schemaVersion: e.schemaVersion, time, actor: e.actor, causedBy: e.causedBy, data: e.value, prevHash: prev, hash } as KnownEvent;
      prev = hash;
    }
    if (feeding) this.#written = { first: seq - batch.length + 1, count: batch.length, ...this.#entries.written(), last: prev };
    return out;
  }

  /**
   * The chain head and the current version of every stream the batch writes to or names in
   * `expected`: one statement for a single stream (the common case of a command), two otherwise.
   */
  #readHead(batch: readonly Prepared[], expected: Readonly<Record<string, number>> | undefined): { head: { seq: number; hash: string } | undefined; versions: Map<string, number> } {
    const streams = new Set<string>();
    for (const e of batch) streams.add(e.stream);
    if (expected !== undefined) for (const s of Object.keys(expected)) streams.add(s);
    const versions = new Map<string, number>();
    if (streams.size === 1) {
      const stream = streams.values().next().value as string;
      const row = this.#stmts.headAndVersion.get(stream);
      if (row !== undefined) versions.set(stream, row.v ?? 0);
      return { head: row, versions };
    }
    const head = this.#stmts.head.get();
    if (head !== undefined && streams.size > 0) {
      for (const r of this.#stmts.versions.all(JSON.stringify([...streams]))) versions.set(r.stream, r.v ?? 0);
    }
    return { head, versions };
  }

  /** A row as an event (every row was validated against its type's schema when it was appended, and is upcast now). */
  toEvent(r: EventRow): KnownEvent {
    return toStoredEvent(this.registry, r) as KnownEvent;
  }
}

/** The triggers that make the log append-only, exactly as migration 0001 creates them. */
const GUARDS = {
  events_no_update: "CREATE TRIGGER events_no_update BEFORE UPDATE ON events BEGIN SELECT RAISE(ABORT, 'events are append-only: UPDATE refused'); END",
  events_no_delete: "CREATE TRIGGER events_no_delete BEFORE DELETE ON events BEGIN SELECT RAISE(ABORT, 'events are append-only: DELETE refused'); END",
} as const;

function normalizeSql(sql: string): string {
  return sql.replace(/\s+/g, " ").trim();
}
