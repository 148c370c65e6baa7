/**
 * How the PostgreSQL log connects: the URL read into a pool's settings (never passed to `pg` as a
 * connection string, whose parameters would override the deadlines set here), the location shown
 * in messages (the URL without its password), the deadlines every session runs with, and the
 * database's refusals turned into {@link StoreError}s with stable codes and no secret in them.
 */
import pg from "pg";
import { StoreError, StoreErrorCode } from "../errors.js";

/** Deadlines of the log's sessions (ms). Every one is set on every connection the log opens. */
export interface PostgresTimeouts {
  /** A statement running longer is cancelled (`timeout`). Default 30 s. */
  readonly statement?: number;
  /** Waiting longer for a lock (the log's write lock included) is given up (`busy`). Default 5 s. */
  readonly lock?: number;
  /** A transaction idle longer is ended by the server, its locks released (`timeout`). Default 10 s. */
  readonly idleInTransaction?: number;
  /** Opening a connection, or waiting for one of the pool's, takes at most this long (`unavailable`). Default 10 s. */
  readonly connect?: number;
}

export const DEFAULT_TIMEOUTS: Required<PostgresTimeouts> = { statement: 30_000, lock: 5_000, idleInTransaction: 10_000, connect: 10_000 };

/** What a URL says, read by {@link readUrl}. */
export interface ParsedUrl {
  readonly config: pg.ClientConfig;
  /** The URL without its password (and without parameters), for messages. */
  readonly location: string;
  /** Texts that must never appear in a message: the password, as given and as decoded. */
  readonly secrets: readonly string[];
}

/** `sslmode` values understood, as `pg`'s `ssl` setting. */
const SSL_MODES: Readonly<Record<string, pg.ClientConfig["ssl"]>> = {
  disable: false,
  require: { rejectUnauthorized: false },
  "verify-ca": { rejectUnauthorized: true },
  "verify-full": { rejectUnauthorized: true },
};

/** Reads `postgres://user:password@host:port/database?sslmode=…&host=…&application_name=…`; throws `unavailable` on anything else. */
export function readUrl(url: string): ParsedUrl {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new StoreError(StoreErrorCode.Unavailable, "the PostgreSQL URL cannot be read (expected postgres://user@host:port/database)");
  }
  if (u.protocol !== "postgres:" && u.protocol !== "postgresql:") {
    throw new StoreError(StoreErrorCode.Unavailable, `the PostgreSQL URL must start with postgres://, not ${u.protocol}//`);
  }
  const password = decodeURIComponent(u.password);
  const secrets = password === "" ? [] : [...new Set([password, u.password])];
  const user = decodeURIComponent(u.username);
  const database = decodeURIComponent(u.pathname.replace(/^\//, ""));
  const config: pg.ClientConfig = {
    host: u.hostname.replace(/^\[(.*)\]$/, "$1") || "localhost",
    port: u.port === "" ? 5432 : Number(u.port),
    ...(user === "" ? {} : { user }),
    ...(password === "" ? {} : { password }),
    ...(database === "" ? {} : { database }),
  };
  readParameters(u.searchParams, config);
  const location = `${u.protocol}//${user === "" ? "" : `${encodeURIComponent(user)}@`}${u.host}${u.pathname}`;
  return { config, location, secrets };
}

/** The URL's parameters into `config`; any other than these is refused rather than ignored. */
function readParameters(params: URLSearchParams, config: pg.ClientConfig): void {
  for (const [key, value] of params) {
    if (key === "sslmode" && value in SSL_MODES) config.ssl = SSL_MODES[value] as pg.ClientConfig["ssl"];
    else if (key === "host") config.host = value;
    else if (key === "application_name") config.application_name = value;
    else throw new StoreError(StoreErrorCode.Unavailable, `the PostgreSQL URL's parameter ${JSON.stringify(key)} is not supported (sslmode, host and application_name are)`);
  }
}

/** int8 (seqs) as numbers: a log never holds 2^53 events, and every caller counts with numbers. */
const TYPES: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: "text" | "binary") =>
    oid === 20 && format !== "binary" ? (v: string) => Number(v) : pg.types.getTypeParser(oid, format)) as pg.CustomTypesConfig["getTypeParser"],
};

/** A client's settings: the URL's, then the log's deadlines and session settings, which nothing in the URL overrides. */
export function clientConfig(parsed: ParsedUrl, timeouts: Required<PostgresTimeouts>, applicationName: string): pg.ClientConfig {
  return {
    ...parsed.config,
    application_name: parsed.config.application_name ?? applicationName,
    statement_timeout: timeouts.statement,
    lock_timeout: timeouts.lock,
    idle_in_transaction_session_timeout: timeouts.idleInTransaction,
    // The client gives up a little after the server would have: a lost server never stalls a caller.
    query_timeout: timeouts.statement + timeouts.connect,
    connectionTimeoutMillis: timeouts.connect,
    keepAlive: true,
    types: TYPES,
    // Every commit waits for its WAL to be flushed (the log's `durable` needs nothing more), and
    // string literals the adapter writes are read as standard SQL (quotes doubled, backslashes plain).
    options: "-c synchronous_commit=on -c standard_conforming_strings=on -c client_min_messages=warning",
  };
}

/** Removes every secret from a message. */
export function redact(message: string, secrets: readonly string[]): string {
  let out = message;
  for (const s of secrets) if (s.length > 0) out = out.split(s).join("***");
  return out;
}

/** A `pg` error's SQLSTATE, or undefined for a socket's error. */
export function sqlState(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === "string" && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

/** SQLSTATEs and what they mean to a caller of the log. */
const BY_STATE: Readonly<Record<string, StoreErrorCode>> = {
  "55P03": StoreErrorCode.Busy, // lock_not_available: lock_timeout
  "57014": StoreErrorCode.Timeout, // query_canceled: statement_timeout
  "25P03": StoreErrorCode.Timeout, // idle_in_transaction_session_timeout
  "42501": StoreErrorCode.Forbidden, // insufficient_privilege (the append-only guards raise it too)
  "23505": StoreErrorCode.Conflict, // unique_violation: a seq or a stream version taken by a writer that bypassed the lock
  "57P01": StoreErrorCode.Unavailable, // admin_shutdown (pg_terminate_backend)
  "57P02": StoreErrorCode.Unavailable,
  "57P03": StoreErrorCode.Unavailable,
  "53300": StoreErrorCode.Unavailable, // too_many_connections
  "28P01": StoreErrorCode.Unavailable, // invalid_password
  "28000": StoreErrorCode.Unavailable,
  "3D000": StoreErrorCode.Unavailable, // invalid_catalog_name: no such database
};

/**
 * A failure of `doing` as a StoreError: the SQLSTATE's meaning, else `unavailable` (a socket's
 * error: nothing was committed) or, when `committing`, `outcome_unknown`.
 */
export function storeError(err: unknown, doing: string, secrets: readonly string[], committing = false): StoreError {
  if (err instanceof StoreError) return err;
  const state = sqlState(err);
  const raw = err instanceof Error ? err.message : String(err);
  const message = redact(`${doing}: ${raw}${state === undefined ? "" : ` (SQLSTATE ${state})`}`, secrets);
  if (state === undefined && committing) {
    return new StoreError(StoreErrorCode.OutcomeUnknown, `${message}; the connection was lost while committing: read the log to know whether the append is in it`);
  }
  return new StoreError(state === undefined ? StoreErrorCode.Unavailable : codeOfState(state), message);
}

/** A SQLSTATE's code: by name where listed, else by its class. */
function codeOfState(state: string): StoreErrorCode {
  const named = BY_STATE[state];
  if (named !== undefined) return named;
  switch (state.slice(0, 2)) {
    case "22": case "23": return StoreErrorCode.InvalidEvent; // a value or a constraint the schema refused
    case "40": return StoreErrorCode.Busy; // serialization failure, deadlock: nothing written, try again
    case "42": return StoreErrorCode.Migration; // a table, column or function missing: the schema is not this build's
    default: return StoreErrorCode.Unavailable;
  }
}
