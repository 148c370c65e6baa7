/** PostgreSQL: the projections' checkpoints (SQLite's 0002_projection_checkpoints). */
import { sql } from "kysely";
import type { Kysely } from "kysely";

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE projection_checkpoints (
      name    text    COLLATE "C" PRIMARY KEY,
      version integer NOT NULL,
      seq     bigint  NOT NULL
    )`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE projection_checkpoints`.execute(db);
}
