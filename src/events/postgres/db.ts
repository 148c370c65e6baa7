/**
 * The log's connections: a bounded pool, every query's failure as a StoreError without secrets,
 * and the write transaction (the advisory lock, then a fresh snapshot of the head) that appends,
 * imports and guard repairs run in.
 */
import pg from "pg";
import { StoreError, StoreErrorCode } from "../errors.js";
import { clientConfig, DEFAULT_TIMEOUTS, readUrl, sqlState, storeError } from "./connection.js";
import type { ParsedUrl, PostgresTimeouts } from "./connection.js";
import { WRITE_LOCK_KEY } from "./sql.js";

/** At most this many connections per log, whatever is asked. */
export const MAX_POOL = 64;

/** A connection holding the write lock, in a transaction. */
export interface Locked {
  /** Runs statements (a simple query: several `;`-separated statements, no parameters) in the transaction. */
  simple(text: string): Promise<pg.QueryResult[]>;
  /** Runs one statement with parameters in the transaction; its failure as a StoreError. */
  query(text: string, values: readonly unknown[]): Promise<pg.QueryResult>;
}

/** One statement with parameters, in a transaction; its failure as a StoreError. */
export type TxQuery = <R extends pg.QueryResultRow = pg.QueryResultRow>(text: string, values?: readonly unknown[]) => Promise<pg.QueryResult<R>>;

/** A statement with parameters, sent on its own (named: parsed and planned once per connection). */
export interface Statement {
  readonly name?: string;
  readonly text: string;
  readonly values: readonly unknown[];
}

/** What a write transaction's body returns: the statements that finish it (before COMMIT), and its result. */
export interface Finish<T> {
  /**
   * Statements sent one by one before the COMMIT (the rows: a large statement followed by another
   * in the same simple query costs the server far more than sent alone, docs/adr/0190).
   */
  readonly before?: readonly Statement[];
  /** Statements run with the COMMIT in one round trip; "" to commit nothing more. */
  readonly text: string;
  readonly result: T;
  /** Checks after a connection lost while committing whether the commit landed (the lock is held again when it runs). */
  readonly landed?: (db: Locked) => Promise<boolean>;
}

/** Where a write transaction is, for what a failure means. */
interface TxState {
  /** The connection's failure, when it failed while checked out. */
  lost: unknown;
  /** The COMMIT was sent: a connection lost now leaves the outcome to be settled. */
  committing: boolean;
  /** The body runs (its throw is its own refusal). */
  inBody: boolean;
}

export class Db {
  readonly pool: pg.Pool;
  readonly location: string;
  readonly #parsed: ParsedUrl;
  readonly #timeouts: Required<PostgresTimeouts>;
  #closed = false;

  constructor(url: string, poolSize: number, timeouts: PostgresTimeouts = {}) {
    this.#parsed = readUrl(url);
    this.location = this.#parsed.location;
    this.#timeouts = { ...DEFAULT_TIMEOUTS, ...timeouts };
    const max = Math.max(1, Math.min(MAX_POOL, Math.floor(poolSize)));
    this.pool = new pg.Pool({ ...this.config("openfief"), max, idleTimeoutMillis: 30_000 });
    // An idle connection's failure (the server restarted, a backend terminated) only drops it from the pool.
    this.pool.on("error", () => undefined);
  }

  /** A connection's settings (deadlines included), for connections outside the pool (the listener, migrations). */
  config(applicationName: string): pg.ClientConfig {
    return clientConfig(this.#parsed, this.#timeouts, applicationName);
  }

  get secrets(): readonly string[] {
    return this.#parsed.secrets;
  }

  /** A query's rows; any failure as a StoreError. */
  async rows<R extends pg.QueryResultRow>(doing: string, text: string, values?: readonly unknown[]): Promise<R[]> {
    this.#open();
    try {
      return (await this.pool.query<R>(text, values as unknown[] | undefined)).rows;
    } catch (err) {
      throw storeError(err, doing, this.secrets);
    }
  }

  /** A query's rows as arrays of column values (no object per row: what long reads use). */
  async arrays(doing: string, text: string, values: readonly unknown[]): Promise<unknown[][]> {
    this.#open();
    try {
      return (await this.pool.query<unknown[]>({ text, values: values as unknown[], rowMode: "array" })).rows;
    } catch (err) {
      throw storeError(err, doing, this.secrets);
    }
  }

  /** Runs statements (`;`-separated, no parameters) in one round trip. */
  async exec(doing: string, text: string): Promise<void> {
    this.#open();
    try {
      await this.pool.query(text);
    } catch (err) {
      throw storeError(err, doing, this.secrets);
    }
  }

  /** A query's first row, or undefined. */
  async row<R extends pg.QueryResultRow>(doing: string, text: string, values?: readonly unknown[]): Promise<R | undefined> {
    return (await this.rows<R>(doing, text, values))[0];
  }

  /**
   * Runs `body` in a transaction holding the write lock, taken before the head is read: the lock
   * is one statement and every read after it is another, so in READ COMMITTED each read's
   * snapshot is taken after the lock was had and sees every append committed before. The body
   * reads what it needs and returns the statements that finish the transaction, sent with the
   * COMMIT in one round trip. A connection lost while committing is settled by `landed` when the
   * body gives one (the lock had again means the lost transaction is over); else `outcome_unknown`.
   */
  async locked<T>(doing: string, first: string, body: (results: pg.QueryResult[], db: Locked) => Promise<Finish<T>>): Promise<T> {
    this.#open();
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (err) {
      throw storeError(err, doing, this.secrets);
    }
    // A connection that fails while checked out emits "error": kept here (unheard, it would be thrown).
    const state: TxState = { lost: null, committing: false, inBody: false };
    const onError = (err: unknown): void => { state.lost ??= err; };
    client.on("error", onError);
    const db: Locked = {
      simple: async (text) => toArray(await client.query(text)),
      query: async (text, values) => {
        try {
          return await client.query(text, values as unknown[]);
        } catch (err) {
          throw storeError(err, doing, this.secrets);
        }
      },
    };
    let finish: Finish<T> | undefined;
    try {
      const results = await db.simple(`BEGIN; SELECT pg_advisory_xact_lock(${WRITE_LOCK_KEY}); ${first}`);
      state.inBody = true;
      finish = await body(results.slice(2), db);
      state.inBody = false;
      if (state.lost !== null) throw state.lost;
      // Not committing yet: a failure here leaves nothing written.
      for (const st of finish.before ?? []) await client.query({ name: st.name, text: st.text, values: st.values as unknown[] });
      if (state.lost !== null) throw state.lost;
      state.committing = true;
      await db.simple(`${finish.text}${finish.text === "" ? "" : "; "}COMMIT`);
      client.off("error", onError);
      client.release();
      return finish.result;
    } catch (err) {
      client.off("error", onError);
      const landed = await this.#failed(client, err, state, doing);
      if (landed === "settle" && finish?.landed !== undefined) return this.#settle(doing, err, finish as Finish<T> & { landed: NonNullable<Finish<T>["landed"]> });
      throw storeError(err, doing, this.secrets, true);
    }
  }

  /**
   * Ends a failed write transaction: rolls back (or drops a broken connection) and throws what
   * the caller is told, unless the failure came while committing over a connection now lost, whose
   * outcome is then to be settled ("settle").
   */
  async #failed(client: pg.PoolClient, err: unknown, state: TxState, doing: string): Promise<"settle"> {
    // The body's own refusal (a conflict, a bad cause, a test hook): rolled back, passed on as it is.
    if (state.inBody && state.lost === null) {
      const rolledBack = await client.query("ROLLBACK").then(() => true, () => false);
      client.release(rolledBack ? undefined : toError(err));
      throw err;
    }
    const fromServer = sqlState(err) !== undefined && !isFatal(err);
    const broken = state.lost !== null || !fromServer;
    if (!broken) await client.query("ROLLBACK").catch(() => undefined);
    client.release(broken ? toError(err) : undefined);
    if (!state.committing || fromServer) throw storeError(state.lost ?? err, doing, this.secrets);
    return "settle";
  }

  /** After a lost commit: whether it landed, asked under the write lock (had only once the lost transaction is over). */
  async #settle<T>(doing: string, lostErr: unknown, finish: Finish<T> & { landed: NonNullable<Finish<T>["landed"]> }): Promise<T> {
    let landed: boolean;
    try {
      landed = await this.locked(doing, "SELECT 1", async (_r, db) => ({ text: "", result: await finish.landed(db) }));
    } catch {
      throw storeError(lostErr, doing, this.secrets, true);
    }
    if (landed) return finish.result;
    throw storeError(lostErr, `${doing} (not committed: the connection was lost before the commit landed)`, this.secrets);
  }

  /**
   * Runs `body` in a transaction on one connection, without the write lock (what the tables beside
   * the log write with): committed when it returns, rolled back when it throws. Every failure is
   * a StoreError; a connection lost while committing is `outcome_unknown`.
   */
  async transaction<T>(doing: string, body: (query: TxQuery) => Promise<T>): Promise<T> {
    this.#open();
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (err) {
      throw storeError(err, doing, this.secrets);
    }
    let lost: unknown = null;
    const onError = (err: unknown): void => { lost ??= err; };
    client.on("error", onError);
    let committing = false;
    try {
      await client.query("BEGIN");
      const result = await body(async <R extends pg.QueryResultRow>(text: string, values?: readonly unknown[]) => client.query<R>(text, values as unknown[] | undefined));
      committing = true;
      await client.query("COMMIT");
      client.off("error", onError);
      client.release();
      return result;
    } catch (err) {
      client.off("error", onError);
      // A refusal (the server's, or the body's own) leaves the connection usable; anything else drops it.
      const usable = lost === null && (err instanceof StoreError || (sqlState(err) !== undefined && !isFatal(err)));
      if (usable) await client.query("ROLLBACK").catch(() => undefined);
      client.release(usable ? undefined : toError(err));
      throw storeError(lost ?? err, doing, this.secrets, committing && !usable);
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.pool.end();
  }

  get closed(): boolean {
    return this.#closed;
  }

  #open(): void {
    if (this.#closed) throw new StoreError(StoreErrorCode.Closed, "the event log is closed");
  }
}

function toArray(r: pg.QueryResult | pg.QueryResult[]): pg.QueryResult[] {
  return Array.isArray(r) ? r : [r];
}

/** A server's error that ended the session (the backend is gone: terminated, timed out idle, shut down). */
function isFatal(err: unknown): boolean {
  const severity = (err as { severity?: unknown } | null)?.severity;
  return severity === "FATAL" || severity === "PANIC";
}

function toError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}
