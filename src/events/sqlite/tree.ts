/**
 * The Merkle tree's tables in the log's file (migration 0010): tiles, the size they cover, and
 * the signed checkpoints. A checkpoint's row and its `log.checkpoint` event commit in one
 * transaction (docs/adr/0141).
 */
import type Database from "better-sqlite3";
import type { KnownEvent } from "../catalog.js";
import type { SqliteEventLog } from "../store.js";
import type { StoredCheckpoint, StoredTile, TreeTable } from "../tables.js";
import type { NewEvent } from "../types.js";

interface TileRow { level: number; idx: number; width: number; hashes: Buffer }

const CHECKPOINT_COLUMNS = "size, root, note, seq";

function tileOf(r: TileRow): StoredTile {
  return { level: r.level, index: r.idx, width: r.width, hashes: new Uint8Array(r.hashes.buffer, r.hashes.byteOffset, r.hashes.byteLength) };
}

/** {@link TreeTable} in the log's file. */
export class SqliteTree implements TreeTable {
  readonly #log: SqliteEventLog;
  readonly #db: Database.Database;
  readonly #size: Database.Statement<[], { size: number }>;
  readonly #tile: Database.Statement<[number, number], TileRow>;
  readonly #put: Database.Statement<[number, number, number, Uint8Array]>;
  readonly #setSize: Database.Statement<[number]>;
  readonly #latest: Database.Statement<[], StoredCheckpoint>;
  readonly #at: Database.Statement<[number], StoredCheckpoint>;
  readonly #insertCheckpoint: Database.Statement<[number, string, string, number]>;

  constructor(log: SqliteEventLog) {
    this.#log = log;
    const db = (this.#db = log.database);
    this.#size = db.prepare("SELECT size FROM tlog_tree WHERE id = 1");
    this.#tile = db.prepare("SELECT level, idx, width, hashes FROM tlog_tiles WHERE level = ? AND idx = ?");
    this.#put = db.prepare("INSERT INTO tlog_tiles (level, idx, width, hashes) VALUES (?, ?, ?, ?) ON CONFLICT (level, idx) DO UPDATE SET width = excluded.width, hashes = excluded.hashes WHERE excluded.width > tlog_tiles.width");
    this.#setSize = db.prepare("INSERT INTO tlog_tree (id, size) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET size = excluded.size");
    this.#latest = db.prepare(`SELECT ${CHECKPOINT_COLUMNS} FROM tlog_checkpoints ORDER BY size DESC LIMIT 1`);
    this.#at = db.prepare(`SELECT ${CHECKPOINT_COLUMNS} FROM tlog_checkpoints WHERE size = ?`);
    this.#insertCheckpoint = db.prepare(`INSERT INTO tlog_checkpoints (${CHECKPOINT_COLUMNS}) VALUES (?, ?, ?, ?)`);
  }

  async size(): Promise<number> {
    this.#log.assertOpen();
    return this.#size.get()?.size ?? 0;
  }

  async tiles(ids: readonly { readonly level: number; readonly index: number }[]): Promise<StoredTile[]> {
    this.#log.assertOpen();
    const out: StoredTile[] = [];
    for (const id of ids) {
      const r = this.#tile.get(id.level, id.index);
      if (r !== undefined) out.push(tileOf(r));
    }
    return out;
  }

  async advance(from: number, to: number, tiles: readonly StoredTile[]): Promise<boolean> {
    this.#log.assertOpen();
    return this.#db.transaction(() => {
      if ((this.#size.get()?.size ?? 0) !== from) return false;
      for (const t of tiles) this.#put.run(t.level, t.index, t.width, t.hashes);
      this.#setSize.run(to);
      return true;
    }).immediate();
  }

  async latestCheckpoint(): Promise<StoredCheckpoint | null> {
    this.#log.assertOpen();
    return this.#latest.get() ?? null;
  }

  async checkpointAt(size: number): Promise<StoredCheckpoint | null> {
    this.#log.assertOpen();
    return this.#at.get(size) ?? null;
  }

  async addCheckpoint(c: Omit<StoredCheckpoint, "seq">, event: NewEvent): Promise<KnownEvent | null> {
    this.#log.assertOpen();
    const stored = this.#db.transaction(() => {
      if (this.#at.get(c.size) !== undefined) return [];
      const events = this.#log.appendInTransaction([event]);
      const seq = events[0]?.seq;
      if (seq !== undefined) this.#insertCheckpoint.run(c.size, c.root, c.note, seq);
      return events;
    }).immediate();
    this.#log.afterCommit(stored);
    return stored[0] ?? null;
  }
}
