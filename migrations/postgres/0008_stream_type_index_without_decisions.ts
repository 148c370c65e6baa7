/**
 * PostgreSQL: the (stream, type, version) index without the egress proxy's and the gateway's
 * decisions (SQLite's 0008). Their streams hold that one type each, so UNIQUE (stream, version)
 * serves them, and they are most of a log: indexed twice, every batch would write an index entry
 * more per decision. PostgreSQL's 0001 made no (stream, type, version) index, so this one creates
 * it directly. Queries by stream and type name the index's condition (`STREAM_TYPE_INDEXED`), as
 * a prepared statement's parameter cannot prove it.
 */
import { sql } from "kysely";
import type { Kysely } from "kysely";

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE INDEX events_stream_type_facts ON events (stream, type, version)
            WHERE type NOT IN ('egress.decision', 'gateway.decision')`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP INDEX IF EXISTS events_stream_type_facts`.execute(db);
}
