/**
 * The append-only event log. Released migrations are never edited: a change is a new migration.
 *
 * Why the triggers: the log is the audit record, so the database itself refuses UPDATE and DELETE
 * on `events`, whatever code asks. Only someone who drops the triggers by hand can change a row,
 * and the hash chain (see src/events/hash.ts) then names the first row that no longer holds.
 */
import { sql } from "kysely";
import type { Kysely } from "kysely";

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE events (
      seq            INTEGER PRIMARY KEY,
      stream         TEXT    NOT NULL,
      version        INTEGER NOT NULL CHECK (version >= 1),
      type           TEXT    NOT NULL,
      schema_version INTEGER NOT NULL CHECK (schema_version >= 1),
      time           TEXT    NOT NULL,
      actor          TEXT    NOT NULL,
      caused_by      INTEGER NULL REFERENCES events(seq) CHECK (caused_by IS NULL OR caused_by < seq),
      data           TEXT    NOT NULL,
      prev_hash      TEXT    NOT NULL,
      hash           TEXT    NOT NULL,
      UNIQUE (stream, version)
    ) STRICT`.execute(db);
  // last(stream, type), observe() and why() look up the latest event of a type in a stream.
  await sql`CREATE INDEX events_stream_type ON events (stream, type, version)`.execute(db);
  // stateAt({time}) and read({since, until}).
  await sql`CREATE INDEX events_time ON events (time)`.execute(db);
  // why() finds the verdict for an image digest without scanning the trust stream.
  await sql`CREATE INDEX events_verdict_digest ON events (json_extract(data, '$.digest'), seq)
            WHERE type = 'signature.verdict'`.execute(db);
  await sql`
    CREATE TRIGGER events_no_update BEFORE UPDATE ON events
    BEGIN SELECT RAISE(ABORT, 'events are append-only: UPDATE refused'); END`.execute(db);
  await sql`
    CREATE TRIGGER events_no_delete BEFORE DELETE ON events
    BEGIN SELECT RAISE(ABORT, 'events are append-only: DELETE refused'); END`.execute(db);
}

export async function down(): Promise<void> {
  throw new Error("the event log is never rolled back");
}
