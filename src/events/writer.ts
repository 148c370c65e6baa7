/**
 * A connection that only commits batches someone waits on, each within a deadline: the egress
 * proxy's writer thread. It waits for the write lock at most until the batch's deadline (SQLite's
 * busy timeout, set per batch) and refuses with `busy` past it; only its own thread ever blocks on
 * the lock. Every commit is durable or none is, as the connection was opened (docs/adr/0096).
 */
import type { KnownEvent } from "./catalog.js";
import { StoreError, StoreErrorCode } from "./errors.js";
import { openSqliteLog } from "./store.js";
import type { NewEvent } from "./types.js";

/** Options of {@link openLogWriter}. */
export interface LogWriterOptions {
  /** The log's SQLite file. */
  readonly file: string;
  /** Each batch on disk before its commit returns (`synchronous=FULL`), or not (`NORMAL`). */
  readonly durable: boolean;
}

/** A writer of batches, each committed in one transaction. */
export interface LogWriter {
  /**
   * Appends `batch` in one transaction, waiting for the write lock until `deadline` (epoch ms) at
   * most: past it, a {@link StoreError} with code `busy` and nothing written. Blocks the calling
   * thread while it waits (run it on a worker thread).
   */
  append(batch: readonly NewEvent[], deadline: number): KnownEvent[];
  close(): Promise<void>;
}

/** Whether `err` is SQLite saying the lock was not had in time. */
function isBusy(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === "SQLITE_BUSY" || code === "SQLITE_BUSY_SNAPSHOT" || code === "SQLITE_LOCKED";
}

/** Opens a {@link LogWriter} on the log in `o.file` (migrating it when needed). */
export async function openLogWriter(o: LogWriterOptions): Promise<LogWriter> {
  const log = await openSqliteLog({ file: o.file, durable: o.durable });
  let busyMs = Number.POSITIVE_INFINITY;
  return {
    append(batch, deadline) {
      const left = Math.floor(deadline - Date.now());
      if (left <= 0) throw new StoreError(StoreErrorCode.Busy, "the batch's deadline passed before its commit began");
      // Never wait past the batch's bound; re-set only when it would (a pragma per batch costs).
      if (left < busyMs || left - busyMs > 250) {
        log.database.pragma(`busy_timeout = ${left}`);
        busyMs = left;
      }
      try {
        return log.appendNow(batch);
      } catch (err) {
        if (isBusy(err)) throw new StoreError(StoreErrorCode.Busy, `the log's write lock was not had within ${left} ms`);
        throw err;
      }
    },
    close: () => log.close(),
  };
}
