/**
 * The egress proxy's decisions counted as they arrive: for each second, minute, hour and day (UTC)
 * in which a plugin's decisions about one destination were made, how many were allowed, how many
 * refused, and the seq of the latest. Counting a window then reads, per destination, whole days
 * inside it and hours, minutes and seconds only at its edges — a number of rows bounded by the
 * window's shape, not by how many decisions it holds (ADR 0100).
 *
 * Like the other projections it has a checkpoint, catches up from it, and is rebuilt from zero
 * when its version changes. Counts are added, so a catch-up commits only if the checkpoint it
 * started from is still the table's: two processes catching up at once never count an event twice.
 */
import type Database from "better-sqlite3";
import { EGRESS_FAILURE_CODES } from "../events/index.js";
import type { EventStore } from "../events/index.js";

/** The units counted, finest first: a second, a minute, an hour, a day (ms). */
export const COUNT_UNITS = [1_000, 60_000, 3_600_000, 86_400_000] as const;

/** One row: the decisions of a plugin about a destination within one unit of time. */
export interface EgressCountRow {
  /** Index into {@link COUNT_UNITS}. */
  readonly level: number;
  /** Where the unit starts (ms since the epoch, a multiple of the unit). */
  readonly start: number;
  readonly plugin: string;
  /** Lower case: one destination, however its decisions wrote it. */
  readonly host: string;
  readonly port: number;
  readonly allowed: number;
  /** Refused by policy. */
  readonly refused: number;
  /** Granted, but the name did not resolve ({@link EGRESS_FAILURE_CODES}). */
  readonly failed: number;
  readonly lastSeq: number;
}

const NAME = "egress_counts";
// 2: failures to reach counted apart from refusals by policy.
const VERSION = 2;
const TABLE = "proj_egress_counts";
/** Seqs read per transaction: a long catch-up commits in steps and never holds the write lock long. */
const STEP = 20_000;

const DDL = `CREATE TABLE IF NOT EXISTS ${TABLE} (
  level INTEGER NOT NULL, start INTEGER NOT NULL, plugin TEXT NOT NULL, host TEXT NOT NULL, port INTEGER NOT NULL,
  allowed INTEGER NOT NULL, refused INTEGER NOT NULL, failed INTEGER NOT NULL, last_seq INTEGER NOT NULL,
  PRIMARY KEY (level, start, plugin, host, port)) STRICT, WITHOUT ROWID`;

/** A whole-second span of one unit: rows of `level` starting in [from, to). */
interface Span { readonly level: number; readonly from: number; readonly to: number }

/**
 * [lo, hi) (whole seconds) as the fewest aligned spans: whole days inside it, then hours, minutes
 * and seconds towards each edge — at most seven.
 */
export function countSpans(lo: number, hi: number, level = COUNT_UNITS.length - 1): Span[] {
  if (lo >= hi) return [];
  if (level === 0) return [{ level, from: lo, to: hi }];
  const unit = COUNT_UNITS[level] as number;
  const a = Math.ceil(lo / unit) * unit;
  const b = Math.floor(hi / unit) * unit;
  if (a >= b) return countSpans(lo, hi, level - 1);
  return [...countSpans(lo, a, level - 1), { level, from: a, to: b }, ...countSpans(b, hi, level - 1)];
}

interface Tally { level: number; start: number; plugin: string; host: string; port: number; allowed: number; refused: number; failed: number; lastSeq: number }

type ScanRow = [seq: number, time: string, plugin: string, host: string, port: number, allowed: number, reason: string];

/** The counts table of one store, caught up on demand. */
export class EgressCounts {
  readonly #db: Database.Database;
  readonly #store: EventStore;
  readonly #stmts;

  constructor(store: EventStore) {
    this.#store = store;
    this.#db = store.database;
    const db = this.#db;
    db.exec("CREATE TABLE IF NOT EXISTS projection_checkpoints (name TEXT PRIMARY KEY, version INTEGER NOT NULL, seq INTEGER NOT NULL) STRICT");
    const cp = db.prepare<[string], { version: number }>("SELECT version FROM projection_checkpoints WHERE name = ?").get(NAME);
    if (cp?.version !== VERSION) this.#reset();
    else db.exec(DDL);
    this.#stmts = {
      checkpoint: db.prepare<[string], { seq: number }>("SELECT seq FROM projection_checkpoints WHERE name = ?"),
      setCheckpoint: db.prepare<[number, string]>("UPDATE projection_checkpoints SET seq = ? WHERE name = ?"),
      scan: db.prepare<[number, number]>(
        "SELECT seq, time, json_extract(data, '$.plugin'), json_extract(data, '$.host'), json_extract(data, '$.port'), json_extract(data, '$.allowed'), json_extract(data, '$.reason') " +
        "FROM events WHERE seq > ? AND seq <= ? AND type = 'egress.decision' ORDER BY seq",
      ).raw(),
      add: db.prepare(
        `INSERT INTO ${TABLE} (level, start, plugin, host, port, allowed, refused, failed, last_seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ` +
        "ON CONFLICT (level, start, plugin, host, port) DO UPDATE SET allowed = allowed + excluded.allowed, refused = refused + excluded.refused, failed = failed + excluded.failed, last_seq = max(last_seq, excluded.last_seq)",
      ),
      rows: db.prepare<[number, number, number]>(`SELECT plugin, host, port, allowed, refused, failed, last_seq, start FROM ${TABLE} WHERE level = ? AND start >= ? AND start < ?`).raw(),
      pluginRows: db.prepare<[number, number, number, string]>(`SELECT plugin, host, port, allowed, refused, failed, last_seq, start FROM ${TABLE} WHERE level = ? AND start >= ? AND start < ? AND plugin = ?`).raw(),
    };
  }

  /** The seq the counts reflect. */
  checkpoint(): number {
    return this.#stmts.checkpoint.get(NAME)?.seq ?? 0;
  }

  /**
   * Counts every decision appended after the checkpoint, up to the log's head, in steps of
   * {@link STEP} seqs, each its own transaction (at most `steps` of them); returns how many it counted.
   */
  catchUp(steps = Number.POSITIVE_INFINITY): number {
    const head = this.#store.head();
    let counted = 0;
    for (let from = this.checkpoint(), step = 0; from < head && step < steps; step++) {
      const to = Math.min(head, from + STEP);
      const tallies = this.#tally(from, to);
      const moved = this.#db.transaction(() => {
        // Another process counted these seqs meanwhile: adding them again would count them twice.
        if (this.checkpoint() !== from) return true;
        for (const t of tallies.values()) this.#stmts.add.run(t.level, t.start, t.plugin, t.host, t.port, t.allowed, t.refused, t.failed, t.lastSeq);
        this.#stmts.setCheckpoint.run(to, NAME);
        return false;
      }).immediate();
      if (moved) { from = this.checkpoint(); continue; }
      for (const t of tallies.values()) if (t.level === 0) counted += t.allowed + t.refused + t.failed;
      from = to;
    }
    return counted;
  }

  /** Drops the counts and counts the whole log again. */
  rebuild(): number {
    this.#db.transaction(() => this.#reset()).immediate();
    return this.catchUp();
  }

  /** Visits every row of the whole seconds [lo, hi) (of one plugin when named), coarsest first. */
  visit(lo: number, hi: number, plugin: string | undefined, fn: (r: EgressCountRow) => void): void {
    for (const s of countSpans(lo, hi)) {
      const rows = (plugin === undefined ? this.#stmts.rows.all(s.level, s.from, s.to) : this.#stmts.pluginRows.all(s.level, s.from, s.to, plugin)) as [string, string, number, number, number, number, number, number][];
      for (const r of rows) fn({ level: s.level, plugin: r[0], host: r[1], port: r[2], allowed: r[3], refused: r[4], failed: r[5], lastSeq: r[6], start: r[7] });
    }
  }

  #tally(from: number, to: number): Map<string, Tally> {
    const out = new Map<string, Tally>();
    for (const [seq, time, plugin, rawHost, port, allowed, reason] of this.#stmts.scan.all(from, to) as ScanRow[]) {
      const t = Date.parse(time);
      // The same rule as the summary's reference: host names compare without case (as the proxy matches them).
      const host = rawHost.toLowerCase();
      for (let level = 0; level < COUNT_UNITS.length; level++) {
        const unit = COUNT_UNITS[level] as number;
        const start = Math.floor(t / unit) * unit;
        const key = `${level}\u0000${start}\u0000${plugin}\u0000${host}\u0000${port}`;
        let tally = out.get(key);
        if (tally === undefined) { tally = { level, start, plugin, host, port, allowed: 0, refused: 0, failed: 0, lastSeq: 0 }; out.set(key, tally); }
        if (allowed === 1) tally.allowed++;
        else if (EGRESS_FAILURE_CODES.has(reason)) tally.failed++;
        else tally.refused++;
        tally.lastSeq = seq;
      }
    }
    return out;
  }

  #reset(): void {
    this.#db.exec(`DROP TABLE IF EXISTS ${TABLE}`);
    this.#db.exec(DDL);
    this.#db.prepare("INSERT INTO projection_checkpoints (name, version, seq) VALUES (?, ?, 0) ON CONFLICT (name) DO UPDATE SET version = excluded.version, seq = 0").run(NAME, VERSION);
  }
}

const opened = new WeakMap<EventStore, EgressCounts>();

/** The counts of a store (one per store object, made on first use). */
export function egressCounts(store: EventStore): EgressCounts {
  let c = opened.get(store);
  if (c === undefined) { c = new EgressCounts(store); opened.set(store, c); }
  return c;
}
