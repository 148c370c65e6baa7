/**
 * The incremental decision check's tables in the log's SQLite file: one row of totals (with the
 * first differences kept, as JSON) and the egress re-decider's list state per plugin; the
 * checkpoint in `projection_checkpoints`.
 */
import type Database from "better-sqlite3";
import type { SqliteEventLog } from "../store.js";
import type { DecisionCheckList, DecisionCheckTable, DecisionCheckTotals } from "../tables.js";
import { CHECKPOINTS_DDL, resetCheckpoint } from "./projection-tables.js";

const NAME = "decision_check";
const DDL = [
  "CREATE TABLE IF NOT EXISTS proj_decision_check (id INTEGER PRIMARY KEY CHECK (id = 1), checked INTEGER NOT NULL, diverged INTEGER NOT NULL, more INTEGER NOT NULL, lists_known INTEGER NOT NULL, divergences TEXT NOT NULL) STRICT",
  "CREATE TABLE IF NOT EXISTS proj_decision_check_lists (plugin TEXT PRIMARY KEY, current TEXT, changed INTEGER NOT NULL, previous TEXT) STRICT",
];

const json = (v: unknown): string | null => (v === null || v === undefined ? null : JSON.stringify(v));
const unjson = (v: string | null): unknown => (v === null ? null : JSON.parse(v));

/** {@link DecisionCheckTable} in the log's file. */
export class SqliteDecisionCheck implements DecisionCheckTable {
  readonly #log: SqliteEventLog;
  readonly #db: Database.Database;
  #stmts: ReturnType<SqliteDecisionCheck["prepare"]> | null = null;
  /** The version {@link open} was given: a reset keeps it. */
  #version = 0;

  constructor(log: SqliteEventLog) {
    this.#log = log;
    this.#db = log.database;
  }

  private prepare() {
    const db = this.#db;
    return {
      checkpoint: db.prepare<[string], { seq: number }>("SELECT seq FROM projection_checkpoints WHERE name = ?"),
      setCheckpoint: db.prepare<[number, string]>("UPDATE projection_checkpoints SET seq = ? WHERE name = ?"),
      totals: db.prepare<[], { checked: number; diverged: number; more: number; lists_known: number; divergences: string }>("SELECT checked, diverged, more, lists_known, divergences FROM proj_decision_check WHERE id = 1"),
      setTotals: db.prepare<[number, number, number, number, string]>(
        "INSERT INTO proj_decision_check (id, checked, diverged, more, lists_known, divergences) VALUES (1, ?, ?, ?, ?, ?) " +
        "ON CONFLICT (id) DO UPDATE SET checked = excluded.checked, diverged = excluded.diverged, more = excluded.more, lists_known = excluded.lists_known, divergences = excluded.divergences",
      ),
      lists: db.prepare<[], { plugin: string; current: string | null; changed: number; previous: string | null }>("SELECT plugin, current, changed, previous FROM proj_decision_check_lists"),
      setList: db.prepare<[string, string | null, number, string | null]>(
        "INSERT INTO proj_decision_check_lists (plugin, current, changed, previous) VALUES (?, ?, ?, ?) " +
        "ON CONFLICT (plugin) DO UPDATE SET current = excluded.current, changed = excluded.changed, previous = excluded.previous",
      ),
    };
  }

  #s(): ReturnType<SqliteDecisionCheck["prepare"]> {
    this.#log.assertOpen();
    if (this.#stmts === null) {
      this.#db.exec(CHECKPOINTS_DDL);
      for (const ddl of DDL) this.#db.exec(ddl);
      this.#stmts = this.prepare();
    }
    return this.#stmts;
  }

  async open(version: number): Promise<void> {
    this.#log.assertOpen();
    this.#db.exec(CHECKPOINTS_DDL);
    const cp = this.#db.prepare<[string], { version: number }>("SELECT version FROM projection_checkpoints WHERE name = ?").get(NAME);
    if (cp?.version !== version) this.#db.transaction(() => this.#reset(version)).immediate();
    else for (const ddl of DDL) this.#db.exec(ddl);
    this.#version = version;
    this.#s();
  }

  async checkpoint(): Promise<number> {
    return this.#checkpoint();
  }

  #checkpoint(): number {
    return this.#s().checkpoint.get(NAME)?.seq ?? 0;
  }

  async load(): Promise<{ totals: DecisionCheckTotals | null; lists: Map<string, DecisionCheckList> }> {
    const s = this.#s();
    const t = s.totals.get();
    const totals = t === undefined ? null : { checked: t.checked, diverged: t.diverged, more: t.more, listsKnown: t.lists_known === 1, divergences: JSON.parse(t.divergences) as unknown[] };
    const lists = new Map<string, DecisionCheckList>();
    for (const r of s.lists.all()) lists.set(r.plugin, { current: unjson(r.current), changed: r.changed === 1, previous: unjson(r.previous) });
    return { totals, lists };
  }

  async save(from: number, to: number, totals: DecisionCheckTotals, lists: ReadonlyMap<string, DecisionCheckList>): Promise<boolean> {
    const s = this.#s();
    return this.#db.transaction(() => {
      // Another process checked these seqs meanwhile: counting them again would count them twice.
      if (this.#checkpoint() !== from) return false;
      s.setTotals.run(totals.checked, totals.diverged, totals.more, totals.listsKnown ? 1 : 0, JSON.stringify(totals.divergences));
      for (const [plugin, l] of lists) s.setList.run(plugin, json(l.current), l.changed ? 1 : 0, json(l.previous));
      s.setCheckpoint.run(to, NAME);
      return true;
    }).immediate();
  }

  async reset(): Promise<void> {
    this.#s();
    this.#db.transaction(() => this.#reset(this.#version)).immediate();
  }

  #reset(version: number): void {
    this.#db.exec("DROP TABLE IF EXISTS proj_decision_check");
    this.#db.exec("DROP TABLE IF EXISTS proj_decision_check_lists");
    for (const ddl of DDL) this.#db.exec(ddl);
    resetCheckpoint(this.#db, NAME, version);
  }
}
