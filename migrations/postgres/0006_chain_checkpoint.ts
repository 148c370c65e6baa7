/**
 * PostgreSQL: the last point of the hash chain a walk verified (SQLite's 0006_chain_checkpoint).
 * Bookkeeping, not audit: losing or editing it only makes the next walk start from the first event.
 */
import { sql } from "kysely";
import type { Kysely } from "kysely";

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE chain_checkpoint (
      id   integer PRIMARY KEY CHECK (id = 1),
      seq  bigint  NOT NULL,
      hash text    NOT NULL
    )`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE chain_checkpoint`.execute(db);
}
