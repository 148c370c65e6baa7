/**
 * Projections' tables in the log's SQLite file: one `STRICT` table per projection (`key` then its
 * columns), made when missing and dropped and made again when the projection's version changes;
 * their checkpoints in `projection_checkpoints`. A commit writes the rows and moves the checkpoints
 * in one transaction.
 */
import type Database from "better-sqlite3";
import type { SqliteEventLog } from "../store.js";
import type { Cell, ProjectionChanges, ProjectionTables, ProjectionTableSpec } from "../tables.js";

/** The checkpoints' table (migration 0002 makes it; a file made before it is given it here too). */
export const CHECKPOINTS_DDL = "CREATE TABLE IF NOT EXISTS projection_checkpoints (name TEXT PRIMARY KEY, version INTEGER NOT NULL, seq INTEGER NOT NULL) STRICT";
const NAME = /^[a-z][a-z0-9_]*$/;

/** Refuses a table or column name that is not a plain identifier (they are spliced into SQL). */
function identifier(name: string): string {
  if (!NAME.test(name)) throw new Error(`not a table or column name: ${JSON.stringify(name)}`);
  return name;
}

/** Sets a checkpoint to 0 at `version` (the caller empties what it counts). */
export function resetCheckpoint(db: Database.Database, name: string, version: number): void {
  db.prepare("INSERT INTO projection_checkpoints (name, version, seq) VALUES (?, ?, 0) ON CONFLICT (name) DO UPDATE SET version = excluded.version, seq = 0").run(name, version);
}

/** {@link ProjectionTables} in the log's file. */
export class SqliteProjectionTables implements ProjectionTables {
  readonly #log: SqliteEventLog;
  readonly #db: Database.Database;
  readonly #checkpointOf: Database.Statement<[string], { version: number; seq: number }>;
  readonly #setCheckpoint: Database.Statement<[number, string]>;

  constructor(log: SqliteEventLog) {
    this.#log = log;
    this.#db = log.database;
    this.#db.exec(CHECKPOINTS_DDL);
    this.#checkpointOf = this.#db.prepare("SELECT version, seq FROM projection_checkpoints WHERE name = ?");
    this.#setCheckpoint = this.#db.prepare("UPDATE projection_checkpoints SET seq = ? WHERE name = ?");
  }

  async open(specs: readonly ProjectionTableSpec[]): Promise<void> {
    this.#log.assertOpen();
    for (const spec of specs) {
      const cp = this.#checkpointOf.get(spec.name);
      if (cp === undefined || cp.version !== spec.version) this.#db.transaction(() => this.#reset(spec)).immediate();
      else this.#db.exec(ddl(spec));
    }
  }

  async checkpoints(names: readonly string[]): Promise<Map<string, number>> {
    this.#log.assertOpen();
    return new Map(names.map((n) => [n, this.#checkpointOf.get(n)?.seq ?? 0]));
  }

  async rows(spec: ProjectionTableSpec): Promise<(readonly [string, Cell[]])[]> {
    this.#log.assertOpen();
    const cols = spec.columns.map((c) => identifier(c.name));
    const rows = this.#db.prepare(`SELECT key, ${cols.join(", ")} FROM ${identifier(spec.table)} ORDER BY key`).raw().all() as Cell[][];
    return rows.map((r) => [String(r[0]), r.slice(1)] as const);
  }

  async reset(specs: readonly ProjectionTableSpec[]): Promise<void> {
    this.#log.assertOpen();
    this.#db.transaction(() => { for (const spec of specs) this.#reset(spec); }).immediate();
  }

  async commit(changes: readonly ProjectionChanges[], seq: number): Promise<void> {
    this.#log.assertOpen();
    this.#db.transaction(() => {
      for (const c of changes) {
        if (c.upserts.length > 0 || c.deletes.length > 0) {
          const table = identifier(c.spec.table);
          const cols = c.spec.columns.map((col) => identifier(col.name));
          const upsert = this.#log.statement(
            `INSERT INTO ${table} (key, ${cols.join(", ")}) VALUES (?${", ?".repeat(cols.length)}) ` +
            `ON CONFLICT (key) DO UPDATE SET ${cols.map((col) => `${col} = excluded.${col}`).join(", ")}`,
          );
          const del = this.#log.statement(`DELETE FROM ${table} WHERE key = ?`);
          for (const key of c.deletes) del.run(key);
          for (const [key, cells] of c.upserts) upsert.run(key, ...cells);
        }
        this.#setCheckpoint.run(seq, c.spec.name);
      }
    })();
  }

  #reset(spec: ProjectionTableSpec): void {
    this.#db.exec(`DROP TABLE IF EXISTS ${identifier(spec.table)}`);
    this.#db.exec(ddl(spec));
    resetCheckpoint(this.#db, spec.name, spec.version);
  }
}

function ddl(spec: ProjectionTableSpec): string {
  return `CREATE TABLE IF NOT EXISTS ${identifier(spec.table)} (key TEXT PRIMARY KEY, ${spec.columns.map((c) => `${identifier(c.name)} ${c.type}`).join(", ")}) STRICT`;
}
