/**
 * The read-only role: what an operator connects as to ask the cluster's log (`why`, `log`,
 * `replay`, `verify-log`, `check-decisions`). It may read every table of the log's schema — the
 * tables the owner's migrations make later too, through the owner's default privileges — and
 * nothing else: no INSERT, no UPDATE, and every transaction of its sessions read-only by default.
 */
import { StoreError, StoreErrorCode } from "../errors.js";

const ROLE = /^[a-z_][a-z0-9_]{0,62}$/;

function quoted(name: string): string {
  if (!ROLE.test(name)) throw new StoreError(StoreErrorCode.Forbidden, `role name ${JSON.stringify(name)} must be lower-case letters, digits and _`);
  return `"${name}"`;
}

/** What {@link readerRoleSql} makes. */
export interface ReaderRoleSpec {
  readonly database: string;
  /** The schema's owner, whose future tables the reader may read. */
  readonly owner: string;
  readonly reader: string;
  /** Its statement deadline (ms); default 60 s. */
  readonly statementTimeoutMs?: number;
}

/** The reader's SQL, in two parts: run as a superuser anywhere (`roles`), then connected to the log's database (`inDatabase`). */
export function readerRoleSql(spec: ReaderRoleSpec): { readonly roles: string; readonly inDatabase: string } {
  const reader = quoted(spec.reader);
  const owner = quoted(spec.owner);
  const db = `"${spec.database.replaceAll('"', '""')}"`;
  const roles = [
    `DO $$ BEGIN CREATE ROLE ${reader} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS; EXCEPTION WHEN duplicate_object THEN NULL; END $$`,
    `ALTER ROLE ${reader} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS`,
    `GRANT CONNECT ON DATABASE ${db} TO ${reader}`,
    `ALTER ROLE ${reader} IN DATABASE ${db} SET default_transaction_read_only = on`,
    `ALTER ROLE ${reader} IN DATABASE ${db} SET statement_timeout = ${Math.floor(spec.statementTimeoutMs ?? 60_000)}`,
  ].join(";\n") + ";\n";
  const inDatabase = [
    `GRANT USAGE ON SCHEMA public TO ${reader}`,
    `GRANT SELECT ON ALL TABLES IN SCHEMA public TO ${reader}`,
    `ALTER DEFAULT PRIVILEGES FOR ROLE ${owner} IN SCHEMA public GRANT SELECT ON TABLES TO ${reader}`,
  ].join(";\n") + ";\n";
  return { roles, inDatabase };
}
