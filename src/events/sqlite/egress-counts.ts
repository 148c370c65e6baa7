/**
 * The egress counts table in the log's SQLite file (ADR 0100): rows by (level, start, plugin,
 * host, port), added to as decisions are counted; its checkpoint in `projection_checkpoints`.
 */
import type Database from "better-sqlite3";
import type { SqliteEventLog } from "../store.js";
import type { EgressCountRow, EgressCountTable, EgressDecisionFacts } from "../tables.js";
import { CHECKPOINTS_DDL, resetCheckpoint } from "./projection-tables.js";

const NAME = "egress_counts";
const TABLE = "proj_egress_counts";
const DDL = `CREATE TABLE IF NOT EXISTS ${TABLE} (
  level INTEGER NOT NULL, start INTEGER NOT NULL, plugin TEXT NOT NULL, host TEXT NOT NULL, port INTEGER NOT NULL,
  allowed INTEGER NOT NULL, refused INTEGER NOT NULL, failed INTEGER NOT NULL, last_seq INTEGER NOT NULL,
  PRIMARY KEY (level, start, plugin, host, port)) STRICT, WITHOUT ROWID`;

type FactRow = [seq: number, time: string, plugin: string, host: string, port: number, allowed: number, reason: string];
type CountRow = [plugin: string, host: string, port: number, allowed: number, refused: number, failed: number, lastSeq: number, start: number];

/** {@link EgressCountTable} in the log's file. */
export class SqliteEgressCounts implements EgressCountTable {
  readonly #log: SqliteEventLog;
  readonly #db: Database.Database;
  #stmts: ReturnType<SqliteEgressCounts["prepare"]> | null = null;
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
      // Only the fields counted, read by SQLite from the JSON: the rest of each decision is never parsed.
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

  #s(): ReturnType<SqliteEgressCounts["prepare"]> {
    this.#log.assertOpen();
    if (this.#stmts === null) {
      // Before `open`: the table as the current version makes it, so the statements can be prepared.
      this.#db.exec(CHECKPOINTS_DDL);
      this.#db.exec(DDL);
      this.#stmts = this.prepare();
    }
    return this.#stmts;
  }

  async open(version: number): Promise<void> {
    this.#log.assertOpen();
    this.#db.exec(CHECKPOINTS_DDL);
    const cp = this.#db.prepare<[string], { version: number }>("SELECT version FROM projection_checkpoints WHERE name = ?").get(NAME);
    if (cp?.version !== version) this.#db.transaction(() => this.#reset(version)).immediate();
    else this.#db.exec(DDL);
    this.#version = version;
    this.#s();
  }

  async checkpoint(): Promise<number> {
    return this.#checkpoint();
  }

  #checkpoint(): number {
    return this.#s().checkpoint.get(NAME)?.seq ?? 0;
  }

  async decisions(afterSeq: number, toSeq: number): Promise<EgressDecisionFacts[]> {
    return (this.#s().scan.all(afterSeq, toSeq) as FactRow[]).map(([seq, time, plugin, host, port, allowed, reason]) => ({ seq, time, plugin, host, port, allowed: allowed === 1, reason }));
  }

  async add(from: number, to: number, rows: readonly EgressCountRow[]): Promise<boolean> {
    const s = this.#s();
    return this.#db.transaction(() => {
      // Another process counted these seqs meanwhile: adding them again would count them twice.
      if (this.#checkpoint() !== from) return false;
      for (const t of rows) s.add.run(t.level, t.start, t.plugin, t.host, t.port, t.allowed, t.refused, t.failed, t.lastSeq);
      s.setCheckpoint.run(to, NAME);
      return true;
    }).immediate();
  }

  async reset(): Promise<void> {
    this.#s();
    this.#db.transaction(() => this.#reset(this.#version)).immediate();
  }

  async rows(level: number, from: number, to: number, plugin?: string): Promise<EgressCountRow[]> {
    const s = this.#s();
    const rows = (plugin === undefined ? s.rows.all(level, from, to) : s.pluginRows.all(level, from, to, plugin)) as CountRow[];
    return rows.map((r) => ({ level, start: r[7], plugin: r[0], host: r[1], port: r[2], allowed: r[3], refused: r[4], failed: r[5], lastSeq: r[6] }));
  }

  #reset(version: number): void {
    this.#db.exec(`DROP TABLE IF EXISTS ${TABLE}`);
    this.#db.exec(DDL);
    resetCheckpoint(this.#db, NAME, version);
  }
}
