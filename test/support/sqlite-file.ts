/**
 * A test's own hands on a log's SQLite file, as someone with the file could use them: a second
 * connection, never the log's (the port hides it). What it writes or breaks, the log then reads.
 */
import Database from "better-sqlite3";

/** Runs `fn` on a fresh connection to `file`, closed after. */
export function withFile<T>(file: string, fn: (db: Database.Database) => T): T {
  const db = new Database(file);
  try {
    db.pragma("busy_timeout = 5000");
    return fn(db);
  } finally {
    db.close();
  }
}

/** Changes an event by hand behind the log's back: drops the trigger that refuses it, then runs `update`. */
export function tamper(file: string, update: string): void {
  withFile(file, (db) => db.exec(`DROP TRIGGER IF EXISTS events_no_update; ${update}`));
}
