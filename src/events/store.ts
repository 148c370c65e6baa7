/**
 * The event store: one SQLite file, one append-only `events` table with a hash chain.
 *
 * The append path uses better-sqlite3 prepared statements synchronously (one BEGIN IMMEDIATE per
 * batch, one hash per row, schemas compiled once); kysely runs the migrations and is exposed for
 * queries. Whoever opens the file runs the migrations first.
 */
import Database from "better-sqlite3";
import type { Kysely } from "kysely";
import { MIGRATION_NAMES } from "../../migrations/names.js";
import { canonicalForm, canonicalJson as canonicalize } from "./canonical.js";
import type { Canonical } from "./canonical.js";
import { catalog } from "./catalog.js";
import { Checkpointer } from "./checkpointer.js";
import type { EventOf, EventTypeName, KnownEvent } from "./catalog.js";
import { StoreError, StoreErrorCode } from "./errors.js";
import type { EventProblem } from "./errors.js";
import { GENESIS_HASH, chainHash } from "./hash.js";
import type { EventRegistry, EventType } from "./registry.js";
import { parseStream, STREAM_TYPE_INDEXED, UNINDEXED_TYPES } from "./streams.js";
import type { ChainPoint, GuardsResult, NewEvent, ReadFilter, StoredEvent, VerifyResult } from "./types.js";

export type { ChainPoint, GuardsResult, NewEvent, StoredEvent, ReadFilter, VerifyResult } from "./types.js";
export { StoreError, StoreErrorCode } from "./errors.js";

/** The tables kysely knows about. */
export interface StoreTables {
  events: {
    seq: number; stream: string; version: number; type: string; schema_version: number; time: string;
    actor: string; caused_by: number | null; data: string; prev_hash: string; hash: string;
  };
  projection_checkpoints: { name: string; version: number; seq: number };
}

/** Options of {@link openStore}. */
export interface StoreOptions {
  /** Path of the SQLite file (created when missing). */
  readonly file: string;
  /** The clock stamped on appended events; defaults to the system clock. */
  readonly clock?: () => Date;
  /** The event types accepted; defaults to the control plane's catalog. */
  readonly registry?: EventRegistry;
}

/** Options of {@link EventStore.append}. */
export interface AppendOptions {
  /** For each stream, the version the caller read (0 for a new stream); else `conflict`. */
  readonly expected?: Readonly<Record<string, number>>;
}

/** Notified in-process after each committed append, with the events appended. */
export type EventListener = (events: readonly KnownEvent[]) => void;

/** The append-only, hash-chained log. */
export interface EventStore {
  readonly file: string;
  /** The better-sqlite3 handle (projections and benchmarks share it). */
  readonly database: Database.Database;
  /** kysely over the same handle, made (and kysely loaded) on first use. */
  kysely(): Promise<Kysely<StoreTables>>;
  readonly registry: EventRegistry;
  /** Appends a batch in one transaction; all or nothing. */
  append(batch: readonly NewEvent[], opts?: AppendOptions): KnownEvent[];
  /**
   * Runs `fn` (synchronous) with each commit it makes on disk before the commit returns
   * (`synchronous=FULL`): what an owner is told was done survives a power loss. Other commits
   * survive a crash of the process, not of the machine (`NORMAL`, WAL synced at checkpoints), and
   * cost a fraction of it (docs/adr/0096). A durable commit syncs every commit before it too.
   */
  durably<T>(fn: () => T): T;
  /** Appends `event` unless the latest event of its observation group in its stream is the same type with equal canonical data. */
  observe(event: NewEvent): KnownEvent | null;
  /** Events of one type matching `filter`, in seq order, data upcast to the current shape. */
  read<T extends EventTypeName>(filter: ReadFilter & { readonly type: T }): EventOf<T>[];
  /** Events of these types matching `filter`, in seq order. */
  read<T extends EventTypeName>(filter: ReadFilter & { readonly type: readonly T[] }): EventOf<T>[];
  /** Events matching `filter`, in seq order, data upcast to the current shape. */
  read(filter?: ReadFilter): KnownEvent[];
  /** The latest event of a stream of type `type`, or null. */
  last<T extends EventTypeName>(stream: string, type: T): EventOf<T> | null;
  /** The latest event of a stream, or null. */
  last(stream: string): KnownEvent | null;
  /** The event with this seq, or null. */
  get(seq: number): KnownEvent | null;
  /** The current version of a stream (0 when empty). */
  version(stream: string): number;
  /**
   * The versions of a stream whose events have seqs in (afterSeq, toSeq] (`from > to` when none):
   * a stream's seqs rise with its versions, so this is a bisection of point lookups, and a stretch
   * of seqs can be read in the (stream, version) index's order.
   */
  versionsBetween(stream: string, afterSeq?: number, toSeq?: number): { readonly from: number; readonly to: number };
  /** The seq of the latest event (0 when empty). */
  head(): number;
  /**
   * Walks the chain; names the first row whose hash does not hold. From a point already verified,
   * checks that row still has its hash and walks only the rows after it.
   */
  verify(from?: ChainPoint): VerifyResult;
  /**
   * Walks the chain from the last point a walk verified (the first event when none) to the head,
   * and moves that point to the head when the chain holds. What `up` and `reconcile` run before
   * acting: its cost is the rows appended since.
   */
  verifySinceCheckpoint(): VerifyResult;
  /** The last point a walk verified ({@link verifySinceCheckpoint} starts there), or null when none did. */
  verifiedPoint(): ChainPoint | null;
  /** The chain's head (seq and hash); seq 0 and the genesis hash when empty. */
  headPoint(): ChainPoint;
  /** Whether the triggers that refuse UPDATE and DELETE on events are in place. */
  checkGuards(): GuardsResult;
  /** Re-creates missing guards (after `verify` found the chain intact); returns the ones restored. */
  restoreGuards(): string[];
  /** Registers a listener; returns the function that removes it. Listeners must not throw. */
  subscribe(fn: EventListener): () => void;
  /**
   * Tells this process's listeners of events another connection to the same file has committed
   * (the egress proxy's writer thread), as if this store had appended them.
   */
  announce(events: readonly KnownEvent[]): void;
  close(): Promise<void>;
}

/** A row of `events` as SQLite returns it (see {@link EVENT_COLUMNS}). */
export interface EventRow {
  seq: number; stream: string; version: number; type: string; schema_version: number; time: string;
  actor: string; caused_by: number | null; data: string; prev_hash: string; hash: string;
}

interface Prepared {
  readonly stream: string;
  readonly type: string;
  readonly schemaVersion: number;
  readonly actor: string;
  readonly causedBy: number | null;
  /** Canonical JSON text, as stored and hashed. */
  readonly data: string;
  /** The plain value `data` denotes (what `JSON.parse(data)` gives), returned as the event's data. */
  readonly value: unknown;
}

const MAX_ACTOR = 200;
/** The columns of `events`, in the order {@link EventRow} names them, for queries written in SQL. */
export const EVENT_COLUMNS = "seq, stream, version, type, schema_version, time, actor, caused_by, data, prev_hash, hash";

/** Opens (creating and migrating when needed) the store in `opts.file`. */
export async function openStore(opts: StoreOptions): Promise<EventStore> {
  const database = new Database(opts.file);
  database.pragma("journal_mode = WAL");
  database.pragma("synchronous = NORMAL");
  database.pragma("foreign_keys = ON");
  database.pragma("busy_timeout = 5000");
  // The file memory-mapped (reads need no copy into SQLite's cache), and 64 MiB of page cache
  // (default 2 MiB) for the pages appends change: the index pages at the end of each stream, one
  // per stream and type, which stay hot. Not more: at the end of every write transaction SQLite
  // walks its cache to drop the pages past the database's end, and with 256 MiB, filled as the
  // log grew, that walk became the largest single cost of a commit at a million events.
  database.pragma("cache_size = -65536");
  database.pragma("mmap_size = 1073741824");
  // Appends never copy the WAL back into the file: the store's checkpoint thread does (checkpointer.ts).
  database.pragma("wal_autocheckpoint = 0");
  if (!migrated(database)) {
    // kysely (and the migrations, which use it) load only when there is something to migrate:
    // loading them costs a command that only reads the log more than the read itself.
    const { Kysely, Migrator, SqliteDialect } = await import("kysely");
    const { migrationProvider } = await import("../../migrations/index.js");
    const db = new Kysely<StoreTables>({ dialect: new SqliteDialect({ database }) });
    const { error, results } = await new Migrator({ db, provider: migrationProvider }).migrateToLatest();
    if (error !== undefined) {
      await db.destroy();
      const failed = results?.find((r) => r.status === "Error")?.migrationName ?? "?";
      throw new StoreError(StoreErrorCode.Migration, `migration ${failed} failed: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  return new SqliteEventStore(opts.file, database, opts.registry ?? catalog, opts.clock ?? (() => new Date()));
}

/** Whether every migration this build knows was applied to the database (kysely's own bookkeeping table). */
function migrated(database: Database.Database): boolean {
  const table = database.prepare<[], { n: number }>("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name = 'kysely_migration'").get();
  if (table === undefined || table.n === 0) return false;
  const applied = new Set(database.prepare<[], { name: string }>("SELECT name FROM kysely_migration").all().map((r) => r.name));
  return MIGRATION_NAMES.every((n) => applied.has(n));
}

class SqliteEventStore implements EventStore {
  readonly #clock: () => Date;
  readonly #listeners = new Set<EventListener>();
  readonly #stmts;
  readonly #cache = new Map<string, Database.Statement>();
  readonly #streams = new Set<string>();
  /** The append transaction, made once (run with `.immediate`: the write lock is taken before the head is read). */
  readonly #appendTx: Database.Transaction<(batch: readonly Prepared[], expected: Readonly<Record<string, number>> | undefined) => KnownEvent[]>;
  /** The observe transaction, made once too (also run with `.immediate`). */
  readonly #observeTx: Database.Transaction<(prepared: Prepared) => KnownEvent[]>;
  readonly #checkpointer: Checkpointer;
  /** Whether SQLite checkpoints inside commits again (no checkpoint thread could run). */
  #inlineCheckpoints = false;
  #closed = false;
  /** How deep in {@link durably} calls this connection is. */
  #durable = 0;

  #kysely: Kysely<StoreTables> | null = null;

  constructor(
    readonly file: string,
    readonly database: Database.Database,
    readonly registry: EventRegistry,
    clock: () => Date,
  ) {
    this.#clock = clock;
    this.#checkpointer = new Checkpointer(file);
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
    };
    this.#appendTx = database.transaction((batch: readonly Prepared[], expected: Readonly<Record<string, number>> | undefined) => this.#write(batch, expected));
    this.#observeTx = database.transaction((prepared: Prepared) => this.#writeUnlessSame(prepared));
  }

  append(batch: readonly NewEvent[], opts: AppendOptions = {}): KnownEvent[] {
    this.#open();
    const prepared = this.#prepare(batch);
    const stored = this.#appendTx.immediate(prepared, opts.expected);
    this.#committed(stored.length);
    this.#notify(stored);
    return stored;
  }

  durably<T>(fn: () => T): T {
    this.#open();
    if (this.#durable++ === 0) this.database.pragma("synchronous = FULL");
    try {
      return fn();
    } finally {
      if (--this.#durable === 0) this.database.pragma("synchronous = NORMAL");
    }
  }

  observe(event: NewEvent): KnownEvent | null {
    this.#open();
    const [prepared] = this.#prepare([event]) as [Prepared];
    const stored = this.#observeTx.immediate(prepared);
    if (stored.length > 0) this.#committed(stored.length);
    this.#notify(stored);
    return stored[0] ?? null;
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

  read(filter?: ReadFilter): KnownEvent[];
  read<T extends EventTypeName>(filter: ReadFilter & { readonly type: T | readonly T[] }): EventOf<T>[];
  read(filter: ReadFilter = {}): KnownEvent[] {
    this.#open();
    const q = this.#whereOf(filter);
    if (q === null) return [];
    let sql = `SELECT ${EVENT_COLUMNS} FROM events`;
    if (q.where.length > 0) sql += ` WHERE ${q.where.join(" AND ")}`;
    sql += ` ORDER BY ${q.order}`;
    if (filter.limit !== undefined) { sql += " LIMIT ?"; q.args.push(Math.max(0, Math.floor(filter.limit))); }
    let stmt = this.#cache.get(sql);
    if (stmt === undefined) {
      stmt = this.database.prepare(sql);
      if (this.#cache.size < 256) this.#cache.set(sql, stmt);
    }
    return (stmt.all(...q.args) as EventRow[]).map((r) => this.#toEvent(r));
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
        const { from, to } = this.versionsBetween(filter.stream, filter.afterSeq, filter.toSeq);
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

  versionsBetween(stream: string, afterSeq?: number, toSeq?: number): { from: number; to: number } {
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

  last(stream: string): KnownEvent | null;
  last<T extends EventTypeName>(stream: string, type: T): EventOf<T> | null;
  last(stream: string, type?: EventTypeName): KnownEvent | null {
    this.#open();
    const row = type === undefined ? this.#stmts.last.get(stream) : this.#lastOfType(stream, type);
    return row === undefined ? null : this.#toEvent(row);
  }

  #lastOfType(stream: string, type: string): EventRow | undefined {
    return (UNINDEXED_TYPES.has(type) ? this.#stmts.lastOfUnindexed : this.#stmts.lastOfType).get(stream, type);
  }

  get(seq: number): KnownEvent | null {
    this.#open();
    const row = this.#stmts.get.get(seq);
    return row === undefined ? null : this.#toEvent(row);
  }

  version(stream: string): number {
    this.#open();
    return this.#stmts.version.get(stream)?.v ?? 0;
  }

  head(): number {
    this.#open();
    return this.#stmts.head.get()?.seq ?? 0;
  }

  verify(from?: ChainPoint): VerifyResult {
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

  verifySinceCheckpoint(): VerifyResult {
    this.#open();
    const cp = this.database.prepare<[], ChainPoint>("SELECT seq, hash FROM chain_checkpoint WHERE id = 1").get();
    const result = this.verify(cp);
    // The walk verified seqs 1..count (contiguous); the point is its last row, not a head that moved since.
    const last = result.ok && result.count > 0 ? this.#stmts.get.get(result.count) : undefined;
    if (last !== undefined) {
      this.database.prepare("INSERT INTO chain_checkpoint (id, seq, hash) VALUES (1, ?, ?) ON CONFLICT (id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash").run(last.seq, last.hash);
    }
    return result;
  }

  verifiedPoint(): ChainPoint | null {
    this.#open();
    return this.database.prepare<[], ChainPoint>("SELECT seq, hash FROM chain_checkpoint WHERE id = 1").get() ?? null;
  }

  headPoint(): ChainPoint {
    this.#open();
    const h = this.#stmts.head.get();
    return h === undefined ? { seq: 0, hash: GENESIS_HASH } : { seq: h.seq, hash: h.hash };
  }

  checkGuards(): GuardsResult {
    this.#open();
    const rows = this.database.prepare<[], { name: string; sql: string | null }>("SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'events'").all();
    const have = new Map(rows.map((r) => [r.name, normalizeSql(r.sql ?? "")]));
    const missing = Object.entries(GUARDS).filter(([name, ddl]) => have.get(name) !== normalizeSql(ddl)).map(([name]) => name);
    return { ok: missing.length === 0, missing };
  }

  restoreGuards(): string[] {
    const { missing } = this.checkGuards();
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

  async kysely(): Promise<Kysely<StoreTables>> {
    this.#open();
    if (this.#kysely === null) {
      const { Kysely: K, SqliteDialect } = await import("kysely");
      this.#kysely = new K<StoreTables>({ dialect: new SqliteDialect({ database: this.database }) });
    }
    return this.#kysely;
  }

  announce(events: readonly KnownEvent[]): void {
    this.#notify(events);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#listeners.clear();
    await this.#checkpointer.close();
    // kysely's SqliteDialect closes the handle it was given; without it, close the handle here.
    if (this.#kysely !== null) await this.#kysely.destroy();
    else this.database.close();
  }

  #open(): void {
    if (this.#closed) throw new StoreError(StoreErrorCode.Closed, "the event store is closed");
  }

  /** Tells the checkpoint thread of a commit; without one, hands checkpoints back to SQLite's commits. */
  #committed(events: number): void {
    if (this.#checkpointer.committed(events) || this.#inlineCheckpoints) return;
    this.#inlineCheckpoints = true;
    this.database.pragma("wal_autocheckpoint = 1000");
  }

  #notify(events: readonly KnownEvent[]): void {
    if (events.length === 0) return;
    for (const fn of this.#listeners) {
      try { fn(events); } catch { /* a listener's failure must not undo a committed append */ }
    }
  }

  /**
   * Validates the whole batch before anything is written; throws with every problem found.
   * The data is put in canonical form first and the schema checks that form, so what is
   * validated is exactly what is stored (after `toJSON()`, without `undefined` members).
   */
  #prepare(batch: readonly NewEvent[]): Prepared[] {
    const out: Prepared[] = [];
    let problems: (EventProblem & { code: StoreErrorCode })[] | undefined;
    const problem = (code: StoreErrorCode, index: number, path: string, message: string): void => { (problems ??= []).push({ code, index, path, message }); };
    for (let index = 0; index < batch.length; index++) {
      const e = batch[index] as NewEvent;
      const def = this.registry.get(e.type);
      if (def === undefined) { problem(StoreErrorCode.UnknownType, index, "type", `unknown event type ${JSON.stringify(String(e.type))}`); continue; }
      let canonical: Canonical;
      try { canonical = canonicalForm(e.data); } catch (err) { problem(StoreErrorCode.InvalidData, index, "data", `not JSON: ${err instanceof Error ? err.message : String(err)}`); continue; }
      const data = canonical.value;
      const bad = def.validate(data);
      if (bad !== null) { for (const b of bad) problem(StoreErrorCode.InvalidData, index, b.path, `${e.type}: ${b.message}`); continue; }
      if (!this.#validStream(e.stream)) { problem(StoreErrorCode.InvalidStream, index, "stream", `invalid stream name ${JSON.stringify(String(e.stream))}`); continue; }
      const why = def.checkStream(e.stream, data);
      if (why !== null) { problem(StoreErrorCode.InvalidStream, index, "stream", `${e.type} ${why}`); continue; }
      if (typeof e.actor !== "string" || e.actor.length === 0 || e.actor.length > MAX_ACTOR) { problem(StoreErrorCode.InvalidEvent, index, "actor", `actor must be a non-empty string of at most ${MAX_ACTOR} characters`); continue; }
      const causedBy = e.causedBy ?? null;
      if (causedBy !== null && (!Number.isSafeInteger(causedBy) || causedBy < 1)) { problem(StoreErrorCode.InvalidCause, index, "causedBy", "causedBy must be the seq of an earlier event"); continue; }
      out.push({ stream: e.stream, type: e.type, schemaVersion: def.version, actor: e.actor, causedBy, data: canonical.text, value: data });
    }
    const first = problems?.[0];
    if (problems !== undefined && first !== undefined) {
      const summary = problems.slice(0, 5).map((p) => `event ${p.index}: ${p.path}: ${p.message}`).join("; ");
      throw new StoreError(first.code, `batch refused, nothing written: ${summary}${problems.length > 5 ? `; and ${problems.length - 5} more` : ""}`, {
        problems: problems.map(({ index, path, message }) => ({ index, path, message })),
      });
    }
    return out;
  }

  /** True for a valid stream name; names already seen are remembered (a log has few streams). */
  #validStream(stream: unknown): boolean {
    if (typeof stream !== "string") return false;
    if (this.#streams.has(stream)) return true;
    if (parseStream(stream) === null) return false;
    if (this.#streams.size >= 4096) this.#streams.clear();
    this.#streams.add(stream);
    return true;
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
    for (let i = 0; i < batch.length; i++) {
      const e = batch[i] as Prepared;
      seq++;
      const version = (versions.get(e.stream) ?? 0) + 1;
      versions.set(e.stream, version);
      if (e.causedBy !== null && e.causedBy >= seq) {
        throw new StoreError(StoreErrorCode.InvalidCause, `causedBy ${e.causedBy} is not an earlier event than seq ${seq}`);
      }
      const hash = chainHash(prev, seq, e.stream, version, e.type, e.schemaVersion, time, e.actor, e.causedBy, e.data);
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

  #toEvent(r: EventRow): KnownEvent {
    // Every row was validated against its type's schema when it was appended (and upcast now).
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

/** Turns a row into an event, its data read through the registry's upcasters. */
export function toStoredEvent(registry: EventRegistry, r: EventRow): StoredEvent {
  const raw = JSON.parse(r.data) as unknown;
  const def = registry.get(r.type);
  const data = def === undefined ? raw : def.upcast(r.schema_version, raw);
  return {
    seq: r.seq, stream: r.stream, version: r.version, type: r.type, schemaVersion: r.schema_version, time: r.time,
    actor: r.actor, causedBy: r.caused_by, data, prevHash: r.prev_hash, hash: r.hash,
  };
}
