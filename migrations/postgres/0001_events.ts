/**
 * PostgreSQL: the append-only event log (what SQLite's 0001_events makes, in PostgreSQL's terms).
 * Released migrations are never edited: a change is a new migration, under the same name for
 * every store (migrations/names.ts is the one list).
 *
 * - Rows keep exactly the bytes that were hashed: `data` is the canonical JSON text, `time` the ISO
 *   text, and text columns compared or ranged over use the "C" collation, so they order by bytes
 *   as SQLite's do, whatever the database's locale.
 * - No foreign key on `caused_by`: seqs run from 1 without a gap and rows are never deleted, so
 *   "an earlier seq" (the CHECK) is "an event that exists", without a lookup per insert.
 * - Triggers refuse UPDATE, DELETE and TRUNCATE whatever code asks; the role the application
 *   connects as does not own the table, so it can neither drop nor disable them (docs/adr/0127).
 * - Lookups whose cost must not grow with the log read indexes over `data::jsonb` limited to the
 *   rows of one type; `events_version_after` finds a stream's version at a seq by bisection, in
 *   one call, over UNIQUE (stream, version) (docs/adr/0125).
 */
import { sql } from "kysely";
import type { Kysely } from "kysely";

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE events (
      seq            bigint  PRIMARY KEY CHECK (seq >= 1),
      stream         text    COLLATE "C" NOT NULL,
      version        integer NOT NULL CHECK (version >= 1),
      type           text    COLLATE "C" NOT NULL,
      schema_version integer NOT NULL CHECK (schema_version >= 1),
      time           text    COLLATE "C" NOT NULL,
      actor          text    NOT NULL,
      caused_by      bigint  NULL CHECK (caused_by IS NULL OR (caused_by >= 1 AND caused_by < seq)),
      data           text    NOT NULL,
      prev_hash      text    NOT NULL,
      hash           text    NOT NULL,
      UNIQUE (stream, version)
    )`.execute(db);
  // seqAt(time) and read({since, until}): the latest event at a time is the index's last entry before it.
  await sql`CREATE INDEX events_time ON events (time, seq)`.execute(db);
  // signatureVerdict(digest, manifest): the latest verdict for a digest checked against a manifest (or none).
  await sql`CREATE INDEX events_verdict_digest ON events ((data::jsonb ->> 'digest'), (data::jsonb ->> 'manifest'), seq)
            WHERE type = 'signature.verdict'`.execute(db);
  // configVerdict(stream, image): the latest config verdict of a plugin for an image.
  await sql`CREATE INDEX events_config_image ON events (stream, (data::jsonb ->> 'image'), seq)
            WHERE type = 'config.verdict'`.execute(db);
  await sql`
    CREATE FUNCTION events_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      RAISE EXCEPTION 'events are append-only: % refused', TG_OP USING ERRCODE = 'insufficient_privilege';
    END $$`.execute(db);
  await sql`CREATE TRIGGER events_no_update BEFORE UPDATE ON events FOR EACH STATEMENT EXECUTE FUNCTION events_refuse_change()`.execute(db);
  await sql`CREATE TRIGGER events_no_delete BEFORE DELETE ON events FOR EACH STATEMENT EXECUTE FUNCTION events_refuse_change()`.execute(db);
  await sql`CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON events FOR EACH STATEMENT EXECUTE FUNCTION events_refuse_change()`.execute(db);
  // The first version of a stream whose seq is above p_seq (its last version + 1 when none is):
  // a stream's seqs rise with its versions, so a stretch of seqs is a stretch of versions.
  await sql`
    CREATE FUNCTION events_version_after(p_stream text, p_seq bigint) RETURNS integer
    LANGUAGE plpgsql STABLE PARALLEL SAFE AS $$
    DECLARE
      lo integer := 1;
      hi integer;
      mid integer;
      s bigint;
    BEGIN
      SELECT e.version, e.seq INTO hi, s FROM events e WHERE e.stream = p_stream ORDER BY e.version DESC LIMIT 1;
      IF hi IS NULL THEN RETURN 1; END IF;
      IF s <= p_seq THEN RETURN hi + 1; END IF;
      WHILE lo < hi LOOP
        mid := (lo + hi) / 2;
        SELECT e.seq INTO s FROM events e WHERE e.stream = p_stream AND e.version = mid;
        IF s > p_seq THEN hi := mid; ELSE lo := mid + 1; END IF;
      END LOOP;
      RETURN lo;
    END $$`.execute(db);
}

export async function down(): Promise<void> {
  throw new Error("the event log is never rolled back");
}
