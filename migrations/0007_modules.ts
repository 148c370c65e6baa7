/**
 * Plugin modules by digest (issue 13): the bytes of each installed WebAssembly module, outside
 * the event log (events carry digests only, so the log stays small and the chain cheap to walk).
 * Unlike `events`, rows are deleted when a module is uninstalled; its `module.installed` and
 * `module.uninstalled` events remain.
 */
import { sql } from "kysely";
import type { Kysely } from "kysely";

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE modules (
      digest       TEXT    PRIMARY KEY CHECK (length(digest) = 64 AND digest NOT GLOB '*[^0-9a-f]*'),
      bytes        BLOB    NOT NULL,
      size         INTEGER NOT NULL CHECK (size = length(bytes)),
      installed_at TEXT    NOT NULL,
      manifest     TEXT    NOT NULL
    ) STRICT`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE modules`.execute(db);
}
