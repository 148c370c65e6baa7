/**
 * Checkpoints of the projections. The projection tables themselves are disposable: each
 * projection creates its own tables and drops and rebuilds them when its `version` changes,
 * so they are not migrations. Only the checkpoint bookkeeping is part of the schema.
 */
import { sql } from "kysely";
import type { Kysely } from "kysely";

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE projection_checkpoints (
      name    TEXT    PRIMARY KEY,
      version INTEGER NOT NULL,
      seq     INTEGER NOT NULL
    ) STRICT`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE projection_checkpoints`.execute(db);
}
