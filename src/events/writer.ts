/**
 * A connection that only commits batches someone waits on, each within a deadline: the egress
 * proxy's writer thread. On SQLite it waits for the write lock at most until the batch's deadline
 * (SQLite's busy timeout, set per batch) and refuses with `busy` past it; only its own thread ever
 * blocks on the lock. Every commit is durable or none is, as the connection was opened
 * (docs/adr/0096). On PostgreSQL it appends to the shared log through a small pool of its own,
 * under the log's write lock like every other writer (the same chain, whoever appends), and gives
 * up on a batch whose deadline passes before the commit is known (docs/adr/0165).
 */
import type { KnownEvent } from "./catalog.js";
import { StoreError, StoreErrorCode } from "./errors.js";
import type { EventLog } from "./port.js";
import { openPostgresLog } from "./postgres-door.js";
import { isBusy } from "./sqlite/busy.js";
import { openSqliteLog } from "./store.js";
import type { NewEvent } from "./types.js";

/** Options of {@link openLogWriter}: a SQLite file, or a PostgreSQL database. */
export type LogWriterOptions =
  | {
    /** The log's SQLite file. */
    readonly file: string;
    /** Each batch on disk before its commit returns (`synchronous=FULL`), or not (`NORMAL`). */
    readonly durable: boolean;
  }
  | {
    /** `postgres://user:password@host:port/database` (the password never appears in a message). */
    readonly url: string;
    /**
     * The longest a batch may wait (ms): the session's lock timeout, and how long opening a
     * connection may take, so that a lost server answers within a batch's bound.
     */
    readonly commitTimeoutMs: number;
  };

/** A writer of batches, each committed in one transaction. */
export interface LogWriter {
  /**
   * Appends `batch` in one transaction, committed by `deadline` (epoch ms) or refused: on SQLite
   * a {@link StoreError} with code `busy` (the write lock not had in time, nothing written),
   * blocking the calling thread while it waits (run it on a worker thread); on PostgreSQL `busy`
   * likewise, `timeout` when the answer did not come in time (the batch may still commit), or the
   * log's own refusal (`unavailable` when the server cannot be reached).
   */
  append(batch: readonly NewEvent[], deadline: number): Promise<KnownEvent[]>;
  close(): Promise<void>;
}

/** Opens a {@link LogWriter}: on the SQLite log in `o.file` (migrating it when needed), or on the PostgreSQL log at `o.url` (as it is). */
export async function openLogWriter(o: LogWriterOptions): Promise<LogWriter> {
  if ("url" in o) return openPostgresWriter(o.url, o.commitTimeoutMs);
  const log = await openSqliteLog({ file: o.file, durable: o.durable });
  let busyMs = Number.POSITIVE_INFINITY;
  return {
    append(batch, deadline) {
      const left = Math.floor(deadline - Date.now());
      if (left <= 0) return Promise.reject(new StoreError(StoreErrorCode.Busy, "the batch's deadline passed before its commit began"));
      // Never wait past the batch's bound; re-set only when it would (a pragma per batch costs).
      if (left < busyMs || left - busyMs > 250) {
        log.database.pragma(`busy_timeout = ${left}`);
        busyMs = left;
      }
      try {
        return Promise.resolve(log.appendNow(batch));
      } catch (err) {
        if (isBusy(err)) return Promise.reject(new StoreError(StoreErrorCode.Busy, `the log's write lock was not had within ${left} ms`));
        return Promise.reject(err);
      }
    },
    close: () => log.close(),
  };
}

/** Connections of a PostgreSQL writer: one commit at a time, and one more for a commit given up on that still holds its own. */
const POSTGRES_WRITER_POOL = 2;
/** The longest a connection attempt may take, however long a batch may wait. */
const POSTGRES_CONNECT_MS = 2_000;

/**
 * A writer on the PostgreSQL log at `url`. Its schema must be there already (the application's
 * role cannot make it). A server lost later is found again by the pool on the next batch: nothing
 * is restarted.
 */
async function openPostgresWriter(url: string, commitTimeoutMs: number): Promise<LogWriter> {
  const bound = Math.max(1, Math.floor(commitTimeoutMs));
  const log: EventLog = await openPostgresLog({
    url, migrate: false, poolSize: POSTGRES_WRITER_POOL,
    // The server gives up waiting for the write lock before the thread gives up on the batch (a
    // quarter of the bound earlier), so a lock not had in time leaves nothing written.
    timeouts: { lock: Math.max(50, Math.floor(bound * 0.75)), connect: Math.min(bound, POSTGRES_CONNECT_MS), statement: Math.max(bound, 1_000), idleInTransaction: Math.max(bound, 1_000) },
  });
  return {
    async append(batch, deadline) {
      const left = Math.floor(deadline - Date.now());
      if (left <= 0) throw new StoreError(StoreErrorCode.Busy, "the batch's deadline passed before its commit began");
      const appending = log.append(batch);
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new StoreError(StoreErrorCode.Timeout, `the log did not answer within ${left} ms`)), left);
      });
      // An append given up on may still commit; its failure then is nobody's to hear.
      appending.catch(() => undefined);
      try {
        return await Promise.race([appending, late]);
      } finally {
        clearTimeout(timer);
      }
    },
    close: () => log.close(),
  };
}
