/**
 * PostgreSQL: the Merkle tree over the log (docs/adr/0141), as SQLite's 0010_log_tree: the tiles,
 * the size they cover, and the signed checkpoints, one per size. The application's role may add
 * a checkpoint but neither change nor delete one (it is granted SELECT and INSERT only). A
 * checkpoint's row is written before its event's in one transaction: the reference is checked at COMMIT.
 */
import { sql } from "kysely";
import type { Kysely } from "kysely";

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE tlog_tiles (
      level  smallint NOT NULL CHECK (level >= 0 AND level <= 63),
      idx    bigint   NOT NULL CHECK (idx >= 0),
      width  smallint NOT NULL CHECK (width >= 1 AND width <= 256),
      hashes bytea    NOT NULL CHECK (octet_length(hashes) = width * 32),
      PRIMARY KEY (level, idx)
    )`.execute(db);
  await sql`CREATE TABLE tlog_tree (id integer PRIMARY KEY CHECK (id = 1), size bigint NOT NULL CHECK (size >= 0))`.execute(db);
  await sql`
    CREATE TABLE tlog_checkpoints (
      size bigint PRIMARY KEY CHECK (size >= 1),
      root text   COLLATE "C" NOT NULL,
      note text   NOT NULL,
      seq  bigint NOT NULL UNIQUE REFERENCES events (seq) DEFERRABLE INITIALLY DEFERRED
    )`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE tlog_checkpoints, tlog_tree, tlog_tiles`.execute(db);
}
