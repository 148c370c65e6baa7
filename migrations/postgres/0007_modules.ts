/**
 * PostgreSQL: plugin modules by digest (SQLite's 0007_modules), outside the event log. Unlike
 * `events`, rows are deleted when a module is uninstalled; its events remain.
 */
import { sql } from "kysely";
import type { Kysely } from "kysely";

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE modules (
      digest       text    COLLATE "C" PRIMARY KEY CHECK (digest ~ '^[0-9a-f]{64}$'),
      bytes        bytea   NOT NULL,
      size         integer NOT NULL CHECK (size = octet_length(bytes)),
      installed_at text    NOT NULL,
      manifest     text    NOT NULL
    )`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE modules`.execute(db);
}
