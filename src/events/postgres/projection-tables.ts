/**
 * Projections' tables in the PostgreSQL log's database (docs/adr/0140): every projection's rows in
 * one table made by migration 0009, `projection_rows (table_name, key, cells)`, the cells of a row
 * as a JSON array in the order of its spec's columns; checkpoints in `projection_checkpoints`. A
 * table is the rows under its name: opening one makes nothing, and a new version deletes its rows.
 * No table is made, altered or dropped at run time, so the application's role needs no privilege
 * to create, and a spec's names reach SQL only as values (checked all the same, so that a spec one
 * store accepts the other does too).
 *
 * A commit writes every table's changes in batches (one statement per few thousand rows, never one
 * per row) and moves their checkpoints, in one transaction. A checkpoint never moves back: a
 * process that folded less than another already committed writes nothing to that table.
 */
import { StoreError, StoreErrorCode } from "../errors.js";
import type { Cell, ProjectionChanges, ProjectionTables, ProjectionTableSpec } from "../tables.js";
import { checkpointsOf, openAt, resetTo } from "./checkpoints.js";
import type { Wanted } from "./checkpoints.js";
import type { Db, TxQuery } from "./db.js";

/** A table's or a column's name, as SQLite's store splices them into SQL. */
const NAME = /^[a-z][a-z0-9_]*$/;
/** Rows per statement of a commit. */
const CHUNK = 5_000;

const UPSERT = `
  INSERT INTO projection_rows (table_name, key, cells)
  SELECT * FROM unnest($1::text[], $2::text[], $3::text[]) AS u(table_name, key, cells)
  ON CONFLICT (table_name, key) DO UPDATE SET cells = excluded.cells`;

const DELETE = `
  DELETE FROM projection_rows p USING unnest($1::text[], $2::text[]) AS u(table_name, key)
  WHERE p.table_name = u.table_name AND p.key = u.key`;

function invalid(message: string): StoreError {
  return new StoreError(StoreErrorCode.InvalidEvent, message);
}

/** Refuses a spec whose table or column names are not plain identifiers, or whose version is not a whole number. */
function checkSpec(spec: ProjectionTableSpec): void {
  // Worded as SQLite's store words it: the same spec is refused the same way by both.
  if (!NAME.test(spec.table)) throw invalid(`not a table or column name: ${JSON.stringify(spec.table)}`);
  for (const c of spec.columns) {
    if (!NAME.test(c.name) || c.name === "key") throw invalid(`not a table or column name: ${JSON.stringify(c.name)}`);
    if (c.type !== "TEXT" && c.type !== "INTEGER") throw invalid(`projection ${JSON.stringify(spec.name)}: column ${c.name} is neither TEXT nor INTEGER`);
  }
  if (!Number.isSafeInteger(spec.version)) throw invalid(`projection ${JSON.stringify(spec.name)}: its version is not a whole number`);
}

/** A text PostgreSQL can hold (no NUL). */
const storable = (s: string): boolean => !s.includes("\0");

/**
 * A row's cells as kept, refusing what SQLite's STRICT table would: a cell count other than the
 * columns', text in an INTEGER column, a number that is not a safe integer. Values never appear in
 * the message (a row may hold anything a projection folds).
 */
function cellsOf(spec: ProjectionTableSpec, key: string, cells: readonly Cell[], i: number): string {
  const where = `projection ${JSON.stringify(spec.name)}, row ${i}`;
  if (typeof key !== "string" || !storable(key)) throw invalid(`${where}: the key is not a text PostgreSQL can hold`);
  if (cells.length !== spec.columns.length) throw invalid(`${where}: ${cells.length} cells for ${spec.columns.length} columns`);
  spec.columns.forEach((c, j) => {
    const v = cells[j];
    const ok = v === null || (c.type === "TEXT" ? typeof v === "string" && storable(v) : Number.isSafeInteger(v));
    if (!ok) throw invalid(`${where}: column ${c.name} holds a value its type (${c.type}) refuses`);
  });
  return JSON.stringify(cells);
}

/** The rows a commit writes to one table: the last change of each key wins, deletes before upserts (as SQLite's store runs them). */
interface TableWrites {
  readonly spec: ProjectionTableSpec;
  readonly rows: Map<string, string | null>;
}

function writesOf(changes: readonly ProjectionChanges[]): Map<string, TableWrites> {
  const byTable = new Map<string, TableWrites>();
  for (const c of changes) {
    checkSpec(c.spec);
    let w = byTable.get(c.spec.table);
    if (w === undefined) byTable.set(c.spec.table, (w = { spec: c.spec, rows: new Map() }));
    c.deletes.forEach((key, i) => {
      if (typeof key !== "string" || !storable(key)) throw invalid(`projection ${JSON.stringify(c.spec.name)}, delete ${i}: the key is not a text PostgreSQL can hold`);
      w.rows.set(key, null);
    });
    c.upserts.forEach(([key, cells], i) => w.rows.set(key, cellsOf(c.spec, key, cells, i)));
  }
  return byTable;
}

/** {@link ProjectionTables} in the log's database. */
export class PostgresProjectionTables implements ProjectionTables {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  async open(specs: readonly ProjectionTableSpec[]): Promise<void> {
    for (const s of specs) checkSpec(s);
    const bySpec = new Map(specs.map((s) => [s.name, s]));
    await openAt(this.#db, "opening projections' tables", specs.map((s) => ({ name: s.name, version: s.version })),
      (q, stale) => emptyTables(q, stale.map((w) => (bySpec.get(w.name) as ProjectionTableSpec).table)));
  }

  async checkpoints(names: readonly string[]): Promise<Map<string, number>> {
    const stored = await checkpointsOf(this.#db, "reading projections' checkpoints", names);
    return new Map(names.map((n) => [n, stored.get(n)?.seq ?? 0]));
  }

  async rows(spec: ProjectionTableSpec): Promise<(readonly [string, Cell[]])[]> {
    checkSpec(spec);
    const rows = await this.#db.arrays("reading a projection's table", "SELECT key, cells FROM projection_rows WHERE table_name = $1 ORDER BY key", [spec.table]);
    return rows.map((r) => [r[0] as string, JSON.parse(r[1] as string) as Cell[]] as const);
  }

  async reset(specs: readonly ProjectionTableSpec[]): Promise<void> {
    for (const s of specs) checkSpec(s);
    if (specs.length === 0) return;
    await this.#db.transaction("emptying projections' tables", async (q) => {
      await emptyTables(q, specs.map((s) => s.table));
      await resetTo(q, specs.map((s): Wanted => ({ name: s.name, version: s.version })));
    });
  }

  async commit(changes: readonly ProjectionChanges[], seq: number): Promise<void> {
    const writes = writesOf(changes);
    const names = [...new Set(changes.map((c) => c.spec.name))].sort();
    if (names.length === 0) return;
    await this.#db.transaction("committing projections", async (q) => {
      // The checkpoints first, under their rows' locks (in name order, as every writer takes them,
      // so two commits of the same projections take turns): a table whose checkpoint is already
      // past `seq` was written by a process that folded more, and is left as it is.
      const locked = await q<{ name: string; seq: number }>(
        "SELECT name, seq FROM projection_checkpoints WHERE name = ANY($1::text[]) ORDER BY name FOR UPDATE", [names]);
      const ahead = new Set(locked.rows.filter((r) => r.seq > seq).map((r) => r.name));
      await q("UPDATE projection_checkpoints SET seq = $2 WHERE name = ANY($1::text[]) AND seq <= $2", [names, seq]);
      const deletes: [string, string][] = [];
      const upserts: [string, string, string][] = [];
      for (const [table, w] of writes) {
        if (ahead.has(w.spec.name)) continue;
        for (const [key, cells] of w.rows) {
          if (cells === null) deletes.push([table, key]);
          else upserts.push([table, key, cells]);
        }
      }
      await writeRows(q, deletes, upserts);
    });
  }
}

async function writeRows(q: TxQuery, deletes: readonly [string, string][], upserts: readonly [string, string, string][]): Promise<void> {
  for (let i = 0; i < deletes.length; i += CHUNK) {
    const c = deletes.slice(i, i + CHUNK);
    await q(DELETE, [c.map((d) => d[0]), c.map((d) => d[1])]);
  }
  for (let i = 0; i < upserts.length; i += CHUNK) {
    const c = upserts.slice(i, i + CHUNK);
    await q(UPSERT, [c.map((u) => u[0]), c.map((u) => u[1]), c.map((u) => u[2])]);
  }
}

async function emptyTables(q: TxQuery, tables: readonly string[]): Promise<void> {
  await q("DELETE FROM projection_rows WHERE table_name = ANY($1::text[])", [tables]);
}
