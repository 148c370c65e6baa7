/** The event log on PostgreSQL: the adapter, its schema's migrations and the roles it runs as. */
export { openPostgresLog } from "./log.js";
export type { PostgresLogOptions } from "./log.js";
export type { PostgresTimeouts } from "./connection.js";
export { migratePostgres, rolesSql, schemaSql, grantsSql } from "./schema.js";
export { readerRoleSql, type ReaderRoleSpec } from "./reader-role.js";
export type { MigrateOptions, RolesSpec } from "./schema.js";
