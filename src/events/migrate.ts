/**
 * Copies a log to another store (SQLite to PostgreSQL when a control plane moves into a cluster,
 * or back), row for row as kept: the same seqs, times, canonical data and hashes, so the copy's
 * chain verifies as the original's did and any checkpoint or signed tree head taken over the
 * original still holds over the copy. Each page is checked as it is written (`importRaw`), then
 * the whole destination is read back and compared with the source byte for byte.
 */
import type { RawEventRow } from "./chain.js";
import { StoreError, StoreErrorCode } from "./errors.js";
import type { EventLog } from "./port.js";
import type { ChainPoint } from "./types.js";

/** What {@link migrateLog} did. */
export interface MigrateResult {
  /** Rows written by this run (a run resumed after an interrupted one writes only the rest). */
  readonly copied: number;
  /** Rows compared with the source after the copy (all of them, from seq 1). */
  readonly compared: number;
  /** The destination's head: the source's head when the copy started. */
  readonly head: ChainPoint;
}

/** Options of {@link migrateLog}. */
export interface MigrateLogOptions {
  /** Rows per page read and per transaction written (default 5,000). */
  readonly pageSize?: number;
  /** Called after each page written, with the seq reached and the seq the copy goes to. */
  readonly progress?: (seq: number, head: number) => void;
}

const FIELDS: readonly (keyof RawEventRow)[] = ["seq", "stream", "version", "type", "schemaVersion", "time", "actor", "causedBy", "data", "prevHash", "hash"];

/**
 * Copies every event of `from` up to its head at the start into `to`, then verifies the copy.
 * `to` must be empty, or hold a prefix of `from` (an interrupted copy, which this run resumes);
 * else `not_empty`. The source may keep appending: what comes after its head at the start is
 * left for a later run. Throws `tampered` when a row does not hold or the copy differs.
 */
export async function migrateLog(from: EventLog, to: EventLog, opts: MigrateLogOptions = {}): Promise<MigrateResult> {
  const pageSize = opts.pageSize ?? 5_000;
  const source = await from.headPoint();
  const start = await to.headPoint();
  if (start.seq > 0) {
    const same = await rowAt(from, start.seq);
    if (same === undefined || same.hash !== start.hash) {
      throw new StoreError(StoreErrorCode.NotEmpty, `${to.location} already holds ${start.seq} events that are not the start of ${from.location}`);
    }
  }
  let copied = 0;
  let head = start;
  for await (const rows of from.rawPages({ afterSeq: start.seq, toSeq: source.seq, pageSize })) {
    head = await to.importRaw(rows);
    copied += rows.length;
    opts.progress?.(head.seq, source.seq);
  }
  const compared = await compare(from, to, source.seq, pageSize);
  const verified = await to.verify();
  if (!verified.ok) throw new StoreError(StoreErrorCode.Tampered, `the copy does not verify at seq ${verified.seq}: ${verified.reason}`);
  return { copied, compared, head };
}

async function rowAt(log: EventLog, seq: number): Promise<RawEventRow | undefined> {
  for await (const rows of log.rawPages({ afterSeq: seq - 1, toSeq: seq, pageSize: 1 })) return rows[0];
  return undefined;
}

/** Reads both logs up to `toSeq` side by side; throws at the first row whose fields differ. */
async function compare(a: EventLog, b: EventLog, toSeq: number, pageSize: number): Promise<number> {
  const left = a.rawPages({ toSeq, pageSize })[Symbol.asyncIterator]();
  const right = b.rawPages({ toSeq, pageSize })[Symbol.asyncIterator]();
  let l: readonly RawEventRow[] = [];
  let r: readonly RawEventRow[] = [];
  let compared = 0;
  for (;;) {
    if (l.length === 0) l = (await left.next()).value ?? [];
    if (r.length === 0) r = (await right.next()).value ?? [];
    const n = Math.min(l.length, r.length);
    if (n === 0) break;
    for (let i = 0; i < n; i++) {
      const x = l[i] as RawEventRow;
      const y = r[i] as RawEventRow;
      const field = FIELDS.find((f) => x[f] !== y[f]);
      if (field !== undefined) throw new StoreError(StoreErrorCode.Tampered, `the copy differs from the source at seq ${x.seq} (${field})`);
    }
    compared += n;
    l = l.slice(n);
    r = r.slice(n);
  }
  if (l.length > 0 || r.length > 0 || compared !== toSeq) {
    throw new StoreError(StoreErrorCode.Tampered, `the copy holds ${compared} rows matching the source's ${toSeq}`);
  }
  return compared;
}
