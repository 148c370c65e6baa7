/**
 * Connectors' deliveries beside the log (docs/adr/0199): `delivery_objects` keeps each delivery's
 * text once by its digest, `deliveries` one row per batch naming it. Rows are only ever added: a
 * batch recorded stands (a retry finds it), and the `sync.delivered` event names its digest.
 */
import { sql } from "kysely";
import type { Kysely } from "kysely";

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE delivery_objects (
      digest TEXT PRIMARY KEY CHECK (length(digest) = 71 AND substr(digest, 1, 7) = 'sha256:' AND substr(digest, 8) NOT GLOB '*[^0-9a-f]*'),
      body   TEXT NOT NULL
    ) STRICT`.execute(db);
  await sql`
    CREATE TABLE deliveries (
      batch_id    TEXT PRIMARY KEY,
      plugin      TEXT NOT NULL,
      kind        TEXT NOT NULL CHECK (kind IN ('sync', 'import')),
      digest      TEXT NOT NULL REFERENCES delivery_objects (digest),
      recorded_at TEXT NOT NULL,
      counts      TEXT NOT NULL
    ) STRICT`.execute(db);
  await sql`CREATE INDEX deliveries_by_plugin ON deliveries (plugin, recorded_at)`.execute(db);
  await sql`CREATE INDEX deliveries_by_time ON deliveries (recorded_at)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE deliveries`.execute(db);
  await sql`DROP TABLE delivery_objects`.execute(db);
}
