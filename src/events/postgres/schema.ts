/**
 * The PostgreSQL log's schema: its migrations run by kysely (as the role that owns the schema),
 * the privileges the application's role is given on what they made, and the SQL an operator runs
 * once, as a superuser, to make the two roles (docs/adr/0127).
 */
import pg from "pg";
import { MIGRATION_NAMES } from "../../../migrations/names.js";
import { StoreError, StoreErrorCode } from "../errors.js";
import { storeError } from "./connection.js";
import type { PostgresTimeouts } from "./connection.js";
import { Db } from "./db.js";
import { literal } from "./sql.js";

/** A role's name: lower-case letters, digits and `_`, as PostgreSQL folds an unquoted name. */
const ROLE = /^[a-z_][a-z0-9_]{0,62}$/;

function role(name: string): string {
  if (!ROLE.test(name)) throw new StoreError(StoreErrorCode.Forbidden, `role name ${JSON.stringify(name)} must be lower-case letters, digits and _`);
  return `"${name}"`;
}

/** The migrations this build knows that the database has not had. */
export async function pendingMigrations(db: Db): Promise<string[]> {
  const present = await db.row<{ present: boolean }>("reading the schema's migrations", "SELECT to_regclass('kysely_migration') IS NOT NULL AS present");
  if (present?.present !== true) return [...MIGRATION_NAMES];
  const applied = new Set((await db.rows<{ name: string }>("reading the schema's migrations", "SELECT name FROM kysely_migration")).map((r) => r.name));
  return MIGRATION_NAMES.filter((n) => !applied.has(n));
}

/** Runs every pending migration (kysely takes its own lock: two processes opening a new database migrate it once). */
export async function runMigrations(db: Db): Promise<void> {
  const { Kysely, Migrator, PostgresDialect } = await import("kysely");
  const { postgresMigrationProvider } = await import("../../../migrations/postgres/index.js");
  const pool = new pg.Pool({ ...db.config("openfief-migrate"), max: 1 });
  pool.on("error", () => undefined);
  const k = new Kysely<unknown>({ dialect: new PostgresDialect({ pool }) });
  try {
    const { error, results } = await new Migrator({ db: k, provider: postgresMigrationProvider }).migrateToLatest();
    if (error !== undefined) {
      const failed = results?.find((r) => r.status === "Error")?.migrationName ?? "?";
      const cause = storeError(error, `migration ${failed} failed`, db.secrets);
      const hint = cause.code === StoreErrorCode.Forbidden || cause.code === StoreErrorCode.Migration
        ? " (migrations run as the role that owns the schema; the application's role may not change it)" : "";
      throw new StoreError(StoreErrorCode.Migration, `${cause.message}${hint}`);
    }
  } finally {
    await k.destroy();
  }
}

/**
 * What the application's role may do on the tables the migrations made: read and append events
 * (never change them: it does not own the table, so it can neither drop nor disable the guards),
 * keep the chain's checkpoint, the projections' checkpoints and rows, the egress counts and the
 * decision check (emptied by TRUNCATE when their version changes), store modules' bytes, and add connectors' deliveries.
 * Idempotent; run by {@link migratePostgres} after each migration.
 */
export function grantsSql(app: string, schema: string): string {
  const r = role(app);
  return [
    `GRANT USAGE ON SCHEMA "${schema.replaceAll('"', '""')}" TO ${r}`,
    `GRANT SELECT, INSERT ON events TO ${r}`,
    `GRANT SELECT ON kysely_migration, kysely_migration_lock TO ${r}`,
    `GRANT SELECT, INSERT, UPDATE ON chain_checkpoint TO ${r}`,
    `GRANT SELECT, INSERT, UPDATE, DELETE ON projection_checkpoints TO ${r}`,
    `GRANT SELECT, INSERT, DELETE ON modules TO ${r}`,
    `GRANT SELECT, INSERT, UPDATE, DELETE ON projection_rows TO ${r}`,
    `GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE ON proj_egress_counts, proj_decision_check, proj_decision_check_lists TO ${r}`,
    `GRANT SELECT, INSERT, UPDATE ON tlog_tiles, tlog_tree TO ${r}`,
    `GRANT SELECT, INSERT ON tlog_checkpoints TO ${r}`,
    `GRANT SELECT, INSERT ON delivery_objects, deliveries TO ${r}`,
    `GRANT EXECUTE ON FUNCTION events_version_after(text, bigint) TO ${r}`,
  ].join(";\n");
}

/** What {@link rolesSql} makes. */
export interface RolesSpec {
  /** The database the log lives in (it is given to the owner). */
  readonly database: string;
  /** The role that owns the schema and runs the migrations (default `openfief_owner`). */
  readonly owner?: string;
  /** The role the control plane connects as (default `openfief_app`). */
  readonly app?: string;
  readonly ownerPassword?: string;
  readonly appPassword?: string;
  /** Deadlines every session of the application's role runs with, whatever client opened it (ms). */
  readonly timeouts?: { readonly statement: number; readonly lock: number; readonly idleInTransaction: number };
}

/**
 * The SQL a superuser runs once to set the roles up: the owner role owns the database (and so its
 * `public` schema), the application's role may connect and nothing more until the migrations
 * grant it what it needs; neither is a superuser (a superuser may disable triggers for its
 * session), and no one else may create objects in the schema. The application's role gets its
 * deadlines as role settings, so a session opened by another client (psql, a script) holding the
 * write lock is bounded too. Passwords, when given, are in the SQL: run it over a trusted channel.
 */
export function rolesSql(spec: RolesSpec): string {
  const owner = role(spec.owner ?? "openfief_owner");
  const app = role(spec.app ?? "openfief_app");
  const db = `"${spec.database.replaceAll('"', '""')}"`;
  const t = spec.timeouts ?? { statement: 30_000, lock: 5_000, idleInTransaction: 10_000 };
  const make = (r: string, password: string | undefined): string =>
    `DO $$ BEGIN CREATE ROLE ${r} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS; EXCEPTION WHEN duplicate_object THEN NULL; END $$;\n` +
    `ALTER ROLE ${r} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS${password === undefined ? "" : ` PASSWORD ${literal(password)}`}`;
  return [
    make(owner, spec.ownerPassword),
    make(app, spec.appPassword),
    `ALTER DATABASE ${db} OWNER TO ${owner}`,
    `REVOKE ALL ON DATABASE ${db} FROM PUBLIC`,
    `GRANT CONNECT, TEMPORARY ON DATABASE ${db} TO ${app}`,
    `ALTER ROLE ${app} IN DATABASE ${db} SET statement_timeout = ${Math.floor(t.statement)}`,
    `ALTER ROLE ${app} IN DATABASE ${db} SET lock_timeout = ${Math.floor(t.lock)}`,
    `ALTER ROLE ${app} IN DATABASE ${db} SET idle_in_transaction_session_timeout = ${Math.floor(t.idleInTransaction)}`,
  ].join(";\n") + ";\n";
}

/** The SQL run in the log's database, as a superuser, after {@link rolesSql}: nobody but the owner creates in `public`. */
export function schemaSql(): string {
  return "REVOKE CREATE ON SCHEMA public FROM PUBLIC;\n";
}

/** What {@link migratePostgres} needs. */
export interface MigrateOptions {
  /** The owner role's URL (its password never appears in a message). */
  readonly url: string;
  /** The application's role, granted what it needs after the migrations (none granted when omitted). */
  readonly appRole?: string;
  readonly timeouts?: PostgresTimeouts;
}

/**
 * Brings the schema to this build's migrations, as its owner, then grants the application's
 * role what it needs: what an operator runs before (or instead of) letting the control plane open
 * the log as the application's role. Returns the migrations it applied.
 */
export async function migratePostgres(opts: MigrateOptions): Promise<string[]> {
  const db = new Db(opts.url, 1, opts.timeouts);
  try {
    const pending = await pendingMigrations(db);
    if (pending.length > 0) await runMigrations(db);
    if (opts.appRole !== undefined) {
      const schema = await db.row<{ s: string }>("reading the schema", "SELECT current_schema() AS s");
      if (schema?.s == null) throw new StoreError(StoreErrorCode.Migration, "the connection has no schema on its search path");
      await db.exec("granting the application's role", grantsSql(opts.appRole, schema.s));
    }
    return pending;
  } finally {
    await db.close();
  }
}
