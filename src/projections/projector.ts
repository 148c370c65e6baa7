/**
 * Runs projections over the log: incremental catch-up from each projection's checkpoint, and
 * drop-and-rebuild from zero. Events are read in pages, folded in memory with the projections'
 * pure `evolve`, and the changed rows and the checkpoints are written in one transaction, so a
 * projection's table always matches its checkpoint.
 */
import type Database from "better-sqlite3";
import type { EventStore, KnownEvent } from "../events/index.js";
import type { Cell, Projection } from "./projection.js";
import { PROJECTIONS } from "./projections.js";

/** Options of {@link Projector}. */
export interface ProjectorOptions {
  /** Where the tables go; defaults to the store's own database. */
  readonly database?: Database.Database;
  readonly projections?: readonly Projection<unknown>[];
  /** Events read per query. */
  readonly pageSize?: number;
}

/** What one catch-up did. */
export interface CatchUpResult {
  /** Events folded (counted once per projection that folded them). */
  readonly applied: number;
  /** Events read from the log. */
  readonly read: number;
  /** The seq every projection now reflects. */
  readonly checkpoint: number;
}

interface Run {
  readonly p: Projection<unknown>;
  readonly types: ReadonlySet<string>;
  seq: number;
  state: Map<string, unknown> | null;
  readonly dirty: Set<string>;
}

const SCAN_COLUMNS = "seq, stream, version, type, schema_version, time, actor, caused_by, data";
const scans = new WeakMap<EventStore, Map<string, Database.Statement>>();

/**
 * Reads a page of events for folding: like `store.read`, through the upcasters, but raw rows and
 * without the hash columns, which folds never use (`prevHash`/`hash` are ""). Rebuild speed is
 * dominated by this read.
 */
function scan(store: EventStore, afterSeq: number, toSeq: number, types: readonly string[], limit: number): KnownEvent[] {
  let cache = scans.get(store);
  if (cache === undefined) { cache = new Map(); scans.set(store, cache); }
  const sql = `SELECT ${SCAN_COLUMNS} FROM events WHERE seq > ? AND seq <= ? AND type IN (${types.map(() => "?").join(", ")}) ORDER BY seq LIMIT ?`;
  let stmt = cache.get(sql);
  if (stmt === undefined) { stmt = store.database.prepare(sql).raw(); cache.set(sql, stmt); }
  const rows = stmt.all(afterSeq, toSeq, ...types, limit) as [number, string, number, string, number, string, string, number | null, string][];
  const registry = store.registry;
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

const CHECKPOINTS_DDL = "CREATE TABLE IF NOT EXISTS projection_checkpoints (name TEXT PRIMARY KEY, version INTEGER NOT NULL, seq INTEGER NOT NULL) STRICT";

/** Keeps a set of projections' tables up to date with an event store. */
export class Projector {
  readonly database: Database.Database;
  readonly #store: EventStore;
  readonly #runs: Run[];
  readonly #pageSize: number;
  /** Prepared once: catch-up runs after every append the reconciler makes. */
  readonly #checkpointOf: Database.Statement<[string], { version: number; seq: number }>;
  readonly #setCheckpoint: Database.Statement<[number, string]>;

  constructor(store: EventStore, opts: ProjectorOptions = {}) {
    this.#store = store;
    this.database = opts.database ?? store.database;
    this.#pageSize = opts.pageSize ?? 20_000;
    this.database.exec(CHECKPOINTS_DDL);
    this.#runs = (opts.projections ?? PROJECTIONS).map((p) => ({ p, types: new Set(p.types), seq: 0, state: null, dirty: new Set<string>() }));
    this.#checkpointOf = this.database.prepare<[string], { version: number; seq: number }>("SELECT version, seq FROM projection_checkpoints WHERE name = ?");
    this.#setCheckpoint = this.database.prepare<[number, string]>("UPDATE projection_checkpoints SET seq = ? WHERE name = ?");
    for (const r of this.#runs) {
      const cp = this.#checkpointOf.get(r.p.name);
      if (cp === undefined || cp.version !== r.p.version) this.#reset(r);
      else this.database.exec(this.#ddl(r.p));
    }
  }

  /** The seq a projection reflects. */
  checkpoint(name: string): number {
    return this.#readCheckpoint(this.#run(name));
  }

  /** Folds every event after each projection's checkpoint, up to the log's head. */
  catchUp(): CatchUpResult {
    const head = this.#store.head();
    for (const r of this.#runs) {
      const seq = this.#readCheckpoint(r);
      if (seq !== r.seq) { r.state = null; r.seq = seq; }
    }
    const behind = this.#runs.filter((r) => r.seq < head);
    if (behind.length === 0) return { applied: 0, read: 0, checkpoint: head };
    const types = [...new Set(behind.flatMap((r) => r.p.types))];
    let cursor = Math.min(...behind.map((r) => r.seq));
    let applied = 0;
    let read = 0;
    for (;;) {
      const page = scan(this.#store, cursor, head, types, this.#pageSize);
      read += page.length;
      for (const e of page) applied += this.#fold(behind, e);
      const last = page[page.length - 1];
      if (last === undefined || page.length < this.#pageSize) break;
      cursor = last.seq;
    }
    try {
      this.#flush(behind, head);
    } catch (err) {
      // The transaction rolled back: forget the folded state, reload it from the tables next time.
      for (const r of behind) { r.state = null; r.dirty.clear(); r.seq = -1; }
      throw err;
    }
    return { applied, read, checkpoint: head };
  }

  /** Drops the tables of the named projections (all when none named) and folds the log from zero. */
  rebuild(names?: readonly string[]): CatchUpResult {
    const runs = names === undefined ? this.#runs : names.map((n) => this.#run(n));
    this.database.transaction(() => { for (const r of runs) this.#reset(r); })();
    return this.catchUp();
  }

  /** Every row of a projection's table, by key, as its state type. */
  rows<S>(name: string): Map<string, S> {
    const r = this.#run(name);
    const out = new Map<string, S>();
    const rows = this.database.prepare(`SELECT key, ${r.p.columns.map((c) => c.name).join(", ")} FROM ${r.p.table} ORDER BY key`).raw().all() as Cell[][];
    for (const row of rows) out.set(String(row[0]), r.p.fromRow(row) as S);
    return out;
  }

  /** The names of the projections run. */
  names(): string[] {
    return this.#runs.map((r) => r.p.name);
  }

  #run(name: string): Run {
    const r = this.#runs.find((x) => x.p.name === name);
    if (r === undefined) throw new Error(`no projection named ${name}`);
    return r;
  }

  #readCheckpoint(r: Run): number {
    return this.#checkpointOf.get(r.p.name)?.seq ?? 0;
  }

  #ddl(p: Projection<unknown>): string {
    return `CREATE TABLE IF NOT EXISTS ${p.table} (key TEXT PRIMARY KEY, ${p.columns.map((c) => `${c.name} ${c.type}`).join(", ")}) STRICT`;
  }

  #reset(r: Run): void {
    this.database.exec(`DROP TABLE IF EXISTS ${r.p.table}`);
    this.database.exec(this.#ddl(r.p));
    this.database.prepare("INSERT INTO projection_checkpoints (name, version, seq) VALUES (?, ?, 0) ON CONFLICT (name) DO UPDATE SET version = excluded.version, seq = 0").run(r.p.name, r.p.version);
    r.seq = 0;
    r.state = new Map();
    r.dirty.clear();
  }

  #load(r: Run): Map<string, unknown> {
    if (r.state === null) r.state = this.rows(r.p.name);
    return r.state;
  }

  #fold(runs: readonly Run[], e: KnownEvent): number {
    let n = 0;
    for (const r of runs) {
      if (e.seq <= r.seq || !r.types.has(e.type)) continue;
      const key = r.p.keyOf(e);
      if (key === null) continue;
      const state = this.#load(r);
      const next = r.p.evolve(state.get(key), e);
      if (next === undefined) state.delete(key);
      else state.set(key, next);
      r.dirty.add(key);
      n++;
    }
    return n;
  }

  #flush(runs: readonly Run[], head: number): void {
    this.database.transaction(() => {
      for (const r of runs) {
        if (r.dirty.size > 0) {
          const state = this.#load(r);
          const cols = r.p.columns.map((c) => c.name);
          const upsert = this.database.prepare(
            `INSERT INTO ${r.p.table} (key, ${cols.join(", ")}) VALUES (?${", ?".repeat(cols.length)}) ` +
            `ON CONFLICT (key) DO UPDATE SET ${cols.map((c) => `${c} = excluded.${c}`).join(", ")}`,
          );
          const del = this.database.prepare(`DELETE FROM ${r.p.table} WHERE key = ?`);
          for (const key of r.dirty) {
            const s = state.get(key);
            if (s === undefined) del.run(key);
            else upsert.run(key, ...r.p.toRow(s));
          }
          r.dirty.clear();
        }
        this.#setCheckpoint.run(head, r.p.name);
        r.seq = head;
      }
    })();
  }
}
