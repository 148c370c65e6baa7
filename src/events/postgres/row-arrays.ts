/**
 * Rows sent to PostgreSQL as one array per column, in the server's binary array format, for one
 * `INSERT … SELECT * FROM unnest($1, …, $11)` (docs/adr/0190). Binary rather than text arrays:
 * a text is sent as its UTF-8 bytes with its length, so nothing is quoted or escaped (by the
 * process) or parsed and unescaped (by the server), and no text can be read as SQL. The server
 * checks each text's encoding as it receives it, as it does for any text.
 */
import { Buffer } from "node:buffer";
import type { RawEventRow } from "../chain.js";
import { StoreError, StoreErrorCode } from "../errors.js";

/** Element types' OIDs (fixed in PostgreSQL's catalog). */
const INT8 = 20;
const INT4 = 23;
const TEXT = 25;

/** The header of a one-dimensional array: dimensions, the has-nulls flag, the element type, the length and lower bound. */
const HEADER = 20;
const TWO_32 = 2 ** 32;

function header(buf: Buffer, hasNulls: boolean, oid: number, n: number): number {
  buf.writeInt32BE(1, 0);
  buf.writeInt32BE(hasNulls ? 1 : 0, 4);
  buf.writeInt32BE(oid, 8);
  buf.writeInt32BE(n, 12);
  buf.writeInt32BE(1, 16);
  return HEADER;
}

function wholeNumber(n: number): number {
  if (!Number.isSafeInteger(n)) throw new StoreError(StoreErrorCode.InvalidEvent, `${n} is not a whole number`);
  return n;
}

/** An `int8[]` of whole numbers, null where a value is null. */
export function int8Array(values: readonly (number | null)[]): Buffer {
  let nulls = 0;
  for (const v of values) if (v === null) nulls++;
  const buf = Buffer.allocUnsafe(HEADER + values.length * 12 - nulls * 8);
  let at = header(buf, nulls > 0, INT8, values.length);
  for (const v of values) {
    if (v === null) { at = buf.writeInt32BE(-1, at); continue; }
    const n = wholeNumber(v);
    at = buf.writeInt32BE(8, at);
    const hi = Math.floor(n / TWO_32);
    at = buf.writeInt32BE(hi, at);
    at = buf.writeUInt32BE(n - hi * TWO_32, at);
  }
  return buf;
}

/** An `int4[]` of whole numbers that fit in 32 bits (no nulls). */
export function int4Array(values: readonly number[]): Buffer {
  const buf = Buffer.allocUnsafe(HEADER + values.length * 8);
  let at = header(buf, false, INT4, values.length);
  for (const v of values) {
    const n = wholeNumber(v);
    if (n > 0x7fffffff || n < -0x80000000) throw new StoreError(StoreErrorCode.InvalidEvent, `${n} does not fit a 32-bit integer`);
    at = buf.writeInt32BE(4, at);
    at = buf.writeInt32BE(n, at);
  }
  return buf;
}

/** A `text[]` (no nulls); a NUL, which PostgreSQL's text cannot hold, is refused. */
export function textArray(values: readonly string[]): Buffer {
  let size = HEADER + values.length * 4;
  const lengths = new Array<number>(values.length);
  for (let i = 0; i < values.length; i++) {
    const s = values[i] as string;
    if (s.includes("\0")) throw new StoreError(StoreErrorCode.InvalidEvent, "a text holds a NUL character, which PostgreSQL cannot store");
    const n = Buffer.byteLength(s, "utf8");
    lengths[i] = n;
    size += n;
  }
  const buf = Buffer.allocUnsafe(size);
  let at = header(buf, false, TEXT, values.length);
  for (let i = 0; i < values.length; i++) {
    at = buf.writeInt32BE(lengths[i] as number, at);
    at += buf.write(values[i] as string, at, "utf8");
  }
  return buf;
}

/** The columns written, in {@link RawEventRow} order, and each one's array type. */
const COLUMNS = [
  ["seq", "int8"], ["stream", "text"], ["version", "int4"], ["type", "text"], ["schema_version", "int4"], ["time", "text"],
  ["actor", "text"], ["caused_by", "int8"], ["data", "text"], ["prev_hash", "text"], ["hash", "text"],
] as const;

/** The statement that inserts rows given as {@link rowArrays} into `table`. */
export function unnestInsertSql(table: string): string {
  return `INSERT INTO ${table} (${COLUMNS.map(([c]) => c).join(", ")}) SELECT * FROM unnest(${COLUMNS.map(([, t], i) => `$${i + 1}::${t}[]`).join(", ")})`;
}

/** The parameters of {@link unnestInsertSql} for `rows`: one binary array per column. */
export function rowArrays(rows: readonly RawEventRow[]): Buffer[] {
  const n = rows.length;
  const seq = new Array<number>(n), stream = new Array<string>(n), version = new Array<number>(n), type = new Array<string>(n);
  const schemaVersion = new Array<number>(n), time = new Array<string>(n), actor = new Array<string>(n), causedBy = new Array<number | null>(n);
  const data = new Array<string>(n), prevHash = new Array<string>(n), hash = new Array<string>(n);
  for (let i = 0; i < n; i++) {
    const r = rows[i] as RawEventRow;
    seq[i] = r.seq; stream[i] = r.stream; version[i] = r.version; type[i] = r.type; schemaVersion[i] = r.schemaVersion; time[i] = r.time;
    actor[i] = r.actor; causedBy[i] = r.causedBy; data[i] = r.data; prevHash[i] = r.prevHash; hash[i] = r.hash;
  }
  return [int8Array(seq), textArray(stream), int4Array(version), textArray(type), int4Array(schemaVersion), textArray(time),
    textArray(actor), int8Array(causedBy), textArray(data), textArray(prevHash), textArray(hash)];
}
