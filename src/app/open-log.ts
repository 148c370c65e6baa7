/**
 * Opening the log a command names: the data folder's own SQLite file, a SQLite file elsewhere
 * (`sqlite:PATH`), or a PostgreSQL database. A PostgreSQL log is opened as it is: its schema is
 * brought up to date by `openfief store init` as the schema's owner, never by a command that only
 * reads or appends (the application's role may not change the schema, docs/postgresql.md).
 */
import { existsSync } from "node:fs";
import { migrateLog, migratePostgres, openPostgresLog, openStore, postgresSetupSql } from "../events/index.js";
import type { EventLog, MigrateResult } from "../events/index.js";
import { privateDataFile } from "./data-dir.js";
import { AppError } from "./errors.js";
import type { StoreLocation } from "./store-location.js";

/** Options of {@link openLogAt}. */
export interface OpenLogOptions {
  /** The clock stamped on appended events. */
  readonly clock?: () => Date;
  /** Refuse a SQLite file that does not exist yet (a command that only reads). */
  readonly mustExist?: boolean;
}

/** Opens the log at `loc`. */
export async function openLogAt(loc: StoreLocation, o: OpenLogOptions = {}): Promise<EventLog> {
  const clock = o.clock === undefined ? {} : { clock: o.clock };
  if (loc.kind === "postgres") return openPostgresLog({ url: loc.url, migrate: false, ...clock });
  if (o.mustExist === true && !existsSync(loc.file)) {
    throw new AppError("not_found", `no event log in ${loc.file}: check --store, or write one first (openfief apply --store sqlite:${loc.file})`);
  }
  // Its owner's only, as a data folder's log is, before SQLite makes its -wal and -shm beside it.
  privateDataFile(loc.file);
  return openStore({ file: loc.file, ...clock });
}

/**
 * Makes (or brings up to date) a PostgreSQL log's schema, connected as the schema's owner, and
 * grants `appRole` what the control plane needs of it; the migrations it applied.
 */
export async function initPostgresStore(loc: StoreLocation, appRole?: string): Promise<string[]> {
  if (loc.kind !== "postgres") throw new AppError("usage", "openfief store init takes a postgres:// URL: a SQLite log is made by the first command that writes it", "store");
  return migratePostgres({ url: loc.url, ...(appRole === undefined ? {} : { appRole }) });
}

/** Where a log is, as a message shows it (a PostgreSQL URL without its password). */
export function storeText(loc: StoreLocation): string {
  return loc.kind === "sqlite" ? `sqlite:${loc.file}` : loc.shown;
}

/**
 * Copies the log at `from` into the one at `to` (empty, or begun by an interrupted copy), then
 * compares them row for row, byte for byte; `to` must differ from `from`.
 */
export async function migrateStore(from: StoreLocation, to: StoreLocation): Promise<MigrateResult> {
  if (storeText(from) === storeText(to)) throw new AppError("usage", `--from and --to name the same log (${storeText(from)})`, "to");
  const source = await openLogAt(from, { mustExist: true });
  try {
    const target = await openLogAt(to);
    try {
      return await migrateLog(source, target);
    } finally {
      await target.close();
    }
  } finally {
    await source.close();
  }
}

/** A PostgreSQL role's or database's name as the setup takes it: an identifier that needs no quoting. */
const NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/** The SQL that sets a database up for the log: an owner role, the application's role, and what each may do. */
export async function storeSetupSql(o: { readonly dbName: string; readonly owner?: string; readonly app?: string; readonly reader?: string }): Promise<string> {
  for (const [flag, v] of [["--database", o.dbName], ["--owner", o.owner], ["--app-role", o.app], ["--reader-role", o.reader]] as const) {
    if (v !== undefined && !NAME.test(v)) throw new AppError("usage", `${flag} ${JSON.stringify(v.slice(0, 64))} is not a name: lower-case letters, digits and _, at most 63, not starting with a digit`, flag.slice(2));
  }
  return postgresSetupSql({ database: o.dbName, ...(o.owner === undefined ? {} : { owner: o.owner }), ...(o.app === undefined ? {} : { app: o.app }) }, o.reader);
}
