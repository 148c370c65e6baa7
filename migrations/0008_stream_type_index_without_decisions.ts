/**
 * The (stream, type, version) index without the egress proxy's and the gateway's decisions. Their
 * streams (`egress/<plugin>`, `gateway/<view>`) hold that one type each, so `UNIQUE (stream,
 * version)` already answers every query on them; and they are most of a log. Indexed a second
 * time, every batch of appends wrote an index page for each of their streams, and the index they
 * filled spread the others' entries over more pages as the log grew. Queries by stream and type
 * name the index's condition (`STREAM_TYPE_INDEXED` in src/events/streams.ts) so SQLite uses it.
 */
import { sql } from "kysely";
import type { Kysely } from "kysely";

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`DROP INDEX IF EXISTS events_stream_type`.execute(db);
  await sql`CREATE INDEX events_stream_type_facts ON events (stream, type, version)
            WHERE type NOT IN ('egress.decision', 'gateway.decision')`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP INDEX IF EXISTS events_stream_type_facts`.execute(db);
  await sql`CREATE INDEX events_stream_type ON events (stream, type, version)`.execute(db);
}
