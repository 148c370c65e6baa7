/**
 * The Merkle tree's tables in the PostgreSQL log's database (migration 0010): tiles, the size
 * they cover, and the signed checkpoints. The size moves by compare-and-set (a row lock on
 * `tlog_tree`), so two processes extending one log's tree never interleave; a checkpoint's row is
 * written inside its `log.checkpoint` event's append, under the write lock (docs/adr/0141).
 */
import type { KnownEvent } from "../catalog.js";
import type { StoredCheckpoint, StoredTile, TreeTable } from "../tables.js";
import type { NewEvent } from "../types.js";
import type { Db } from "./db.js";
import type { AppendAlong } from "./modules.js";

interface TileRow { level: number; idx: number; width: number; hashes: Buffer }

const CHECKPOINT_COLUMNS = "size, root, note, seq";

const PUT = `
  INSERT INTO tlog_tiles (level, idx, width, hashes)
  SELECT * FROM unnest($1::smallint[], $2::bigint[], $3::smallint[], $4::bytea[])
  ON CONFLICT (level, idx) DO UPDATE SET width = excluded.width, hashes = excluded.hashes WHERE excluded.width > tlog_tiles.width`;

/** {@link TreeTable} in the log's database. */
export class PostgresTree implements TreeTable {
  readonly #db: Db;
  readonly #appendAlong: AppendAlong;

  constructor(db: Db, appendAlong: AppendAlong) {
    this.#db = db;
    this.#appendAlong = appendAlong;
  }

  async size(): Promise<number> {
    return (await this.#db.row<{ size: number }>("reading the tree's size", "SELECT size FROM tlog_tree WHERE id = 1"))?.size ?? 0;
  }

  async tiles(ids: readonly { readonly level: number; readonly index: number }[]): Promise<StoredTile[]> {
    if (ids.length === 0) return [];
    const rows = await this.#db.rows<TileRow>("reading the tree's tiles",
      "SELECT t.level, t.idx, t.width, t.hashes FROM tlog_tiles t JOIN unnest($1::smallint[], $2::bigint[]) AS w(level, idx) ON t.level = w.level AND t.idx = w.idx",
      [ids.map((i) => i.level), ids.map((i) => i.index)]);
    return rows.map((r) => ({ level: r.level, index: r.idx, width: r.width, hashes: new Uint8Array(r.hashes.buffer, r.hashes.byteOffset, r.hashes.byteLength) }));
  }

  async advance(from: number, to: number, tiles: readonly StoredTile[]): Promise<boolean> {
    return this.#db.transaction("extending the tree", async (q) => {
      await q("INSERT INTO tlog_tree (id, size) VALUES (1, 0) ON CONFLICT (id) DO NOTHING");
      const size = (await q<{ size: number }>("SELECT size FROM tlog_tree WHERE id = 1 FOR UPDATE")).rows[0]?.size ?? 0;
      if (size !== from) return false;
      if (tiles.length > 0) {
        await q(PUT, [tiles.map((t) => t.level), tiles.map((t) => t.index), tiles.map((t) => t.width), tiles.map((t) => Buffer.from(t.hashes.buffer, t.hashes.byteOffset, t.hashes.byteLength))]);
      }
      await q("UPDATE tlog_tree SET size = $1 WHERE id = 1", [to]);
      return true;
    });
  }

  async latestCheckpoint(): Promise<StoredCheckpoint | null> {
    return (await this.#db.row<StoredCheckpoint>("reading the latest checkpoint", `SELECT ${CHECKPOINT_COLUMNS} FROM tlog_checkpoints ORDER BY size DESC LIMIT 1`)) ?? null;
  }

  async checkpointAt(size: number): Promise<StoredCheckpoint | null> {
    return (await this.#db.row<StoredCheckpoint>("reading a checkpoint", `SELECT ${CHECKPOINT_COLUMNS} FROM tlog_checkpoints WHERE size = $1`, [size])) ?? null;
  }

  async addCheckpoint(c: Omit<StoredCheckpoint, "seq">, event: NewEvent): Promise<KnownEvent | null> {
    // The event's seq is the head's next: read under the write lock, in the append's transaction.
    const [stored] = await this.#appendAlong("recording a checkpoint", event, async (tx) => (await tx.query(
      `INSERT INTO tlog_checkpoints (${CHECKPOINT_COLUMNS}) SELECT $1, $2, $3, coalesce((SELECT max(seq) FROM events), 0) + 1 ON CONFLICT (size) DO NOTHING`,
      [c.size, c.root, c.note])).rowCount === 1);
    return stored ?? null;
  }
}
