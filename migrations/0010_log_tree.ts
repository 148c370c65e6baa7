/**
 * The Merkle tree over the log (docs/adr/0141): its tiles (C2SP tlog-tiles, height 8; a partial
 * tile is stored at its current width and replaced by a wider one), the size they cover, and the
 * signed checkpoints, one per size, which triggers keep from being changed or deleted.
 */
import { sql } from "kysely";
import type { Kysely } from "kysely";

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE tlog_tiles (
      level  INTEGER NOT NULL CHECK (level >= 0 AND level <= 63),
      idx    INTEGER NOT NULL CHECK (idx >= 0),
      width  INTEGER NOT NULL CHECK (width >= 1 AND width <= 256),
      hashes BLOB    NOT NULL CHECK (length(hashes) = width * 32),
      PRIMARY KEY (level, idx)
    ) WITHOUT ROWID`.execute(db);
  await sql`CREATE TABLE tlog_tree (id INTEGER PRIMARY KEY CHECK (id = 1), size INTEGER NOT NULL CHECK (size >= 0))`.execute(db);
  await sql`
    CREATE TABLE tlog_checkpoints (
      size INTEGER PRIMARY KEY CHECK (size >= 1),
      root TEXT    NOT NULL,
      note TEXT    NOT NULL,
      seq  INTEGER NOT NULL UNIQUE REFERENCES events (seq)
    )`.execute(db);
  await sql`CREATE TRIGGER tlog_checkpoints_no_update BEFORE UPDATE ON tlog_checkpoints BEGIN SELECT RAISE(ABORT, 'checkpoints are never changed: UPDATE refused'); END`.execute(db);
  await sql`CREATE TRIGGER tlog_checkpoints_no_delete BEFORE DELETE ON tlog_checkpoints BEGIN SELECT RAISE(ABORT, 'checkpoints are never changed: DELETE refused'); END`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE tlog_checkpoints`.execute(db);
  await sql`DROP TABLE tlog_tree`.execute(db);
  await sql`DROP TABLE tlog_tiles`.execute(db);
}
