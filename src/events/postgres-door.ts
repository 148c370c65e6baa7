/**
 * The PostgreSQL log through the events door, loaded on first use: a command whose log is a
 * SQLite file never loads `pg` (a read command's start-up is mostly what it loads, ADR 0113).
 */
import type { EventLog } from "./port.js";
import type { MigrateOptions, PostgresLogOptions, RolesSpec } from "./postgres/index.js";

/** Opens the log in the PostgreSQL database `opts.url` names (see `src/events/postgres/log.ts`). */
export async function openPostgresLog(opts: PostgresLogOptions): Promise<EventLog> {
  const { openPostgresLog: open } = await import("./postgres/index.js");
  return open(opts);
}

/** Brings the database's schema to the latest migration, as its owner; the names of the migrations it applied. */
export async function migratePostgres(opts: MigrateOptions): Promise<string[]> {
  const { migratePostgres: migrate } = await import("./postgres/index.js");
  return migrate(opts);
}

/**
 * The SQL a superuser runs once to make the owner and application roles (without passwords: set
 * each with `\password`), then, connected to the database, the SQL that keeps the application's
 * role from creating anything in it; with `reader`, also a read-only role that may read every
 * table of the log, those later migrations make too.
 */
export async function postgresSetupSql(spec: RolesSpec, reader?: string): Promise<string> {
  const { readerRoleSql, rolesSql, schemaSql } = await import("./postgres/index.js");
  const r = reader === undefined ? null : readerRoleSql({ database: spec.database, owner: spec.owner ?? "openfief_owner", reader });
  const roles = `${rolesSql(spec).trimEnd()}\n${r === null ? "" : r.roles}`;
  return `${roles.trimEnd()}\n-- Then, connected to the database ${JSON.stringify(spec.database)} as a superuser:\n${schemaSql()}${r === null ? "" : r.inDatabase}`;
}
