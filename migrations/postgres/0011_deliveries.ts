/**
 * PostgreSQL: connectors' deliveries beside the log (SQLite's 0011_deliveries; docs/adr/0199).
 * The application's role may read and add rows, never change or delete them (src/events/postgres/schema.ts).
 */
import { sql } from "kysely";
import type { Kysely } from "kysely";

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE delivery_objects (
      digest text COLLATE "C" PRIMARY KEY CHECK (digest ~ '^sha256:[0-9a-f]{64}$'),
      body   text NOT NULL
    )`.execute(db);
  await sql`
    CREATE TABLE deliveries (
      batch_id    text COLLATE "C" PRIMARY KEY,
      plugin      text COLLATE "C" NOT NULL,
      kind        text NOT NULL CHECK (kind IN ('sync', 'import')),
      digest      text COLLATE "C" NOT NULL REFERENCES delivery_objects (digest),
      recorded_at text COLLATE "C" NOT NULL,
      counts      text NOT NULL
    )`.execute(db);
  await sql`CREATE INDEX deliveries_by_plugin ON deliveries (plugin, recorded_at)`.execute(db);
  await sql`CREATE INDEX deliveries_by_time ON deliveries (recorded_at)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE deliveries`.execute(db);
  await sql`DROP TABLE delivery_objects`.execute(db);
}
