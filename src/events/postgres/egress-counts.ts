/**
 * The egress counts table in the PostgreSQL log's database (docs/adr/0100, 0140): rows by (level,
 * start, plugin, host, port), added to as decisions are counted, its checkpoint in
 * `projection_checkpoints`. The table is migration 0009's; a new version empties it.
 */
import type { EgressCountRow, EgressCountTable, EgressDecisionFacts } from "../tables.js";
import { checkpointsOf, moveFrom, openAt, resetTo } from "./checkpoints.js";
import type { Db, TxQuery } from "./db.js";

const NAME = "egress_counts";
/** Rows per INSERT: a long catch-up's step sends its counts in a few statements, never one per row. */
const CHUNK = 5_000;

/** A stretch of the log longer than this many seqs is read in parts at once, at most {@link PARTS}. */
const PART_SEQS = 5_000;
const PARTS = 3;

const COLUMNS = "level, start, plugin, host, port, allowed, refused, failed, last_seq";

/** Adds a chunk of counts (one row per destination and unit: see {@link merged}). */
const ADD = `
  INSERT INTO proj_egress_counts (${COLUMNS})
  SELECT * FROM unnest($1::smallint[], $2::bigint[], $3::text[], $4::text[], $5::int[], $6::bigint[], $7::bigint[], $8::bigint[], $9::bigint[]) AS u(${COLUMNS})
  ON CONFLICT (level, start, plugin, host, port) DO UPDATE SET
    allowed = proj_egress_counts.allowed + excluded.allowed,
    refused = proj_egress_counts.refused + excluded.refused,
    failed = proj_egress_counts.failed + excluded.failed,
    last_seq = greatest(proj_egress_counts.last_seq, excluded.last_seq)`;

/**
 * Only the fields counted: each decision's JSON is parsed once by the server and the rest of it
 * never reaches this process.
 */
const DECISIONS = `
  SELECT e.seq, e.time, d.plugin, d.host, d.port, d.allowed, d.reason
  FROM events e, json_to_record(e.data::json) AS d(plugin text, host text, port int, allowed boolean, reason text)
  WHERE e.seq > $1 AND e.seq <= $2 AND e.type = 'egress.decision'
  ORDER BY e.seq`;

const ROWS = `SELECT ${COLUMNS} FROM proj_egress_counts WHERE level = $1 AND start >= $2 AND start < $3`;

type CountRow = [level: number, start: number, plugin: string, host: string, port: number, allowed: number, refused: number, failed: number, lastSeq: number];

/** {@link EgressCountTable} in the log's database. */
export class PostgresEgressCounts implements EgressCountTable {
  readonly #db: Db;
  /** The version {@link open} was given: a reset keeps it. */
  #version = 0;

  constructor(db: Db) {
    this.#db = db;
  }

  async open(version: number): Promise<void> {
    await openAt(this.#db, "opening the egress counts", [{ name: NAME, version }], (q) => empty(q));
    this.#version = version;
  }

  async checkpoint(): Promise<number> {
    return (await checkpointsOf(this.#db, "reading the egress counts' checkpoint", [NAME])).get(NAME)?.seq ?? 0;
  }

  async decisions(afterSeq: number, toSeq: number): Promise<EgressDecisionFacts[]> {
    // A long stretch is read as a few ranges at once, on as many connections: the server parses
    // their JSON side by side (seqs are dense, so the ranges are known before any row arrives).
    const parts = Math.max(1, Math.min(PARTS, Math.ceil((toSeq - afterSeq) / PART_SEQS)));
    const step = Math.ceil((toSeq - afterSeq) / parts);
    const reads: Promise<unknown[][]>[] = [];
    for (let from = afterSeq; from < toSeq; from += step) reads.push(this.#db.arrays("reading egress decisions", DECISIONS, [from, Math.min(toSeq, from + step)]));
    const rows = (await Promise.all(reads)).flat();
    return rows.map(([seq, time, plugin, host, port, allowed, reason]) => ({
      seq: seq as number, time: time as string, plugin: plugin as string, host: host as string, port: port as number, allowed: allowed === true, reason: reason as string,
    }));
  }

  async add(from: number, to: number, rows: readonly EgressCountRow[]): Promise<boolean> {
    return this.#db.transaction("counting egress decisions", async (q) => {
      // First, under the checkpoint's lock: another process that counted these seqs meanwhile moved
      // it, and adding them again would count them twice.
      if (!(await moveFrom(q, NAME, this.#version, from, to))) return false;
      const all = merged(rows);
      for (let i = 0; i < all.length; i += CHUNK) {
        const c = all.slice(i, i + CHUNK);
        await q(ADD, [
          c.map((r) => r.level), c.map((r) => r.start), c.map((r) => r.plugin), c.map((r) => r.host), c.map((r) => r.port),
          c.map((r) => r.allowed), c.map((r) => r.refused), c.map((r) => r.failed), c.map((r) => r.lastSeq),
        ]);
      }
      return true;
    });
  }

  async reset(): Promise<void> {
    await this.#db.transaction("emptying the egress counts", async (q) => {
      await empty(q);
      await resetTo(q, [{ name: NAME, version: this.#version }]);
    });
  }

  async rows(level: number, from: number, to: number, plugin?: string): Promise<EgressCountRow[]> {
    const rows = plugin === undefined
      ? await this.#db.arrays("reading the egress counts", `${ROWS} ORDER BY start, plugin, host, port`, [level, from, to])
      : await this.#db.arrays("reading the egress counts", `${ROWS} AND plugin = $4 ORDER BY start, host, port`, [level, from, to, plugin]);
    return (rows as CountRow[]).map(([lvl, start, p, host, port, allowed, refused, failed, lastSeq]) => ({ level: lvl, start, plugin: p, host, port, allowed, refused, failed, lastSeq }));
  }
}

/**
 * Rows of one destination and unit summed into one: a statement may not update a row twice, and
 * summing here costs less than grouping in the statement.
 */
function merged(rows: readonly EgressCountRow[]): readonly EgressCountRow[] {
  const byKey = new Map<string, EgressCountRow>();
  for (const r of rows) {
    const key = `${r.level}\u0000${r.start}\u0000${r.plugin}\u0000${r.host}\u0000${r.port}`;
    const o = byKey.get(key);
    byKey.set(key, o === undefined ? r : { ...o, allowed: o.allowed + r.allowed, refused: o.refused + r.refused, failed: o.failed + r.failed, lastSeq: Math.max(o.lastSeq, r.lastSeq) });
  }
  return byKey.size === rows.length ? rows : [...byKey.values()];
}

/** TRUNCATE rather than DELETE: a reset of a long log's counts is one step, not one per row. */
async function empty(q: TxQuery): Promise<void> {
  await q("TRUNCATE proj_egress_counts");
}
