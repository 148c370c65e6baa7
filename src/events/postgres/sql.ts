/**
 * SQL the PostgreSQL log writes itself: string literals (statements sent in one simple query, which
 * takes no parameters: what an append reads under the write lock, and a small batch's rows), the columns read back as rows, the write lock's key, the
 * notification channel, and the append-only guards as migration 0001 made them.
 */
import type { RawEventRow } from "../chain.js";
import { StoreError, StoreErrorCode } from "../errors.js";

/**
 * A string as a standard SQL literal. Sessions run with `standard_conforming_strings=on` (set by
 * the log on every connection), where doubling the quotes is the whole of the quoting; a NUL,
 * which PostgreSQL's text cannot hold, is refused.
 */
export function literal(s: string): string {
  if (s.includes("\0")) throw new StoreError(StoreErrorCode.InvalidEvent, "a text holds a NUL character, which PostgreSQL cannot store");
  return `'${s.replaceAll("'", "''")}'`;
}

/** A whole number as SQL (only safe integers are written). */
export function integer(n: number): string {
  if (!Number.isSafeInteger(n)) throw new StoreError(StoreErrorCode.InvalidEvent, `${n} is not a whole number`);
  return String(n);
}

/**
 * The key of the transaction-level advisory lock every append takes before it reads the head:
 * "openfief" in ASCII. Advisory locks are per database, so two logs in two databases never wait
 * on each other (and kysely's migration lock uses a key of its own).
 */
export const WRITE_LOCK_KEY = "8030029660440585574";

/** The channel each append notifies, in its transaction, with the new head's seq. */
export const CHANNEL = "openfief_events";

/** The columns of `events` as a {@link RawEventRow}'s fields. */
export const RAW_COLUMNS = `seq, stream, version, type, schema_version AS "schemaVersion", time, actor, caused_by AS "causedBy", data, prev_hash AS "prevHash", hash`;

/** The columns of `events` in {@link RawEventRow} order, read as arrays by long reads (see {@link rowOfArray}). */
export const ARRAY_COLUMNS = "seq, stream, version, type, schema_version, time, actor, caused_by, data, prev_hash, hash";

/** The same without the hashes (folds never read them; they read as ""). */
export const UNHASHED_ARRAY_COLUMNS = "seq, stream, version, type, schema_version, time, actor, caused_by, data";

/** A row read as an array of {@link ARRAY_COLUMNS} (or {@link UNHASHED_ARRAY_COLUMNS}). */
export function rowOfArray(a: readonly unknown[]): RawEventRow {
  return {
    seq: a[0] as number, stream: a[1] as string, version: a[2] as number, type: a[3] as string, schemaVersion: a[4] as number,
    time: a[5] as string, actor: a[6] as string, causedBy: a[7] as number | null, data: a[8] as string,
    prevHash: (a[9] as string | undefined) ?? "", hash: (a[10] as string | undefined) ?? "",
  };
}

/** The columns an INSERT names, in {@link RawEventRow} order. */
export const INSERT_COLUMNS = "seq, stream, version, type, schema_version, time, actor, caused_by, data, prev_hash, hash";

/** The body of the function the guards run, as migration 0001 wrote it (compared without its spacing). */
export const REFUSE_BODY = `
    BEGIN
      RAISE EXCEPTION 'events are append-only: % refused', TG_OP USING ERRCODE = 'insufficient_privilege';
    END `;

/** The guards: each trigger's name, and the `tgtype` bits of a statement-level BEFORE trigger on its event. */
export const GUARDS = {
  events_no_update: { event: "UPDATE", tgtype: 2 | 16 },
  events_no_delete: { event: "DELETE", tgtype: 2 | 8 },
  events_no_truncate: { event: "TRUNCATE", tgtype: 2 | 32 },
} as const;

export type GuardName = keyof typeof GUARDS;

/** Re-creates the guard function and one trigger, as migration 0001 made them. */
export function guardDdl(name: GuardName): string {
  return `CREATE OR REPLACE FUNCTION events_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$${REFUSE_BODY}$$;
    DROP TRIGGER IF EXISTS ${name} ON events;
    CREATE TRIGGER ${name} BEFORE ${GUARDS[name].event} ON events FOR EACH STATEMENT EXECUTE FUNCTION events_refuse_change()`;
}

/** Spacing does not matter when comparing a function's body with its definition. */
export function normalizeSql(s: string): string {
  return s.replace(/\s+/g, " ").trim();
}
