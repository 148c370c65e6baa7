/**
 * The log's store: `store init` makes (or brings up to date) a PostgreSQL log's schema as its
 * owner, and `migrate-store` copies a log to another store (SQLite to PostgreSQL, or back) row for
 * row, then compares the copy with the original byte for byte.
 */
import type { Command } from "commander";
import { AppError, initPostgresStore, migrateStore, parseStoreLocation, storeSetupSql, storeText as where } from "../../app/index.js";
import { print, printJson, withJson } from "../context.js";

/** A PostgreSQL role's name, as `store init --app-role` takes it (an identifier that needs no quoting). */
const ROLE = /^[a-z_][a-z0-9_]{0,62}$/;

export function register(program: Command): void {
  const store = program.command("store").description("the event log's store: a PostgreSQL log's schema");
  store.command("roles")
    .description("print the SQL a superuser runs once: the schema's owner, the application's role and, when asked, a read-only role (set their passwords with \\password)")
    .requiredOption("--database <name>", "the database the log lives in")
    .option("--owner <role>", "the role that owns the schema and runs the migrations", "openfief_owner")
    .option("--app-role <role>", "the role the control plane connects as", "openfief_app")
    .option("--reader-role <role>", "also a read-only role, for asking the log (why, log, replay, verify-log, check-decisions)")
    .action(async ({ database, owner, appRole, readerRole }: { database: string; owner: string; appRole: string; readerRole?: string }) => {
      print(await storeSetupSql({ dbName: database, owner, app: appRole, ...(readerRole === undefined ? {} : { reader: readerRole }) }));
    });

  withJson(store.command("init"))
    .description("make or bring up to date a PostgreSQL log's schema, connected as the schema's owner, and grant the application's role what it needs")
    .requiredOption("--store <url>", "postgres://OWNER@HOST:PORT/DATABASE (the role that owns the schema)")
    .option("--app-role <role>", "the role the control plane connects as: granted reading and appending, never changing the log")
    .action(async (o: { store: string; appRole?: string; json?: boolean }) => {
      const loc = parseStoreLocation(o.store);
      if (o.appRole !== undefined && !ROLE.test(o.appRole)) throw new AppError("usage", `--app-role ${JSON.stringify(o.appRole.slice(0, 64))} is not a role name: lower-case letters, digits and _, at most 63`, "app-role");
      const applied = await initPostgresStore(loc, o.appRole);
      if (o.json === true) printJson({ store: where(loc), applied, appRole: o.appRole ?? null });
      else print(`${where(loc)}: ${applied.length === 0 ? "the schema was up to date" : `applied ${applied.join(", ")}`}${o.appRole === undefined ? "" : `; ${o.appRole} may read and append`}`);
    });

  withJson(program.command("migrate-store"))
    .description("copy a log to another store and verify the copy: the same rows, the same hashes, byte for byte")
    .requiredOption("--from <log>", "the log to copy: sqlite:PATH or postgres://…")
    .requiredOption("--to <log>", "an empty log (or one an interrupted copy began): sqlite:PATH or postgres://…")
    .action(async (o: { from: string; to: string; json?: boolean }) => {
      const from = parseStoreLocation(o.from, "--from");
      const to = parseStoreLocation(o.to, "--to");
      const r = await migrateStore(from, to);
      if (o.json === true) printJson({ from: where(from), to: where(to), copied: r.copied, compared: r.compared, head: r.head });
      else print(`copied ${r.copied} event(s) from ${where(from)} to ${where(to)}; the copy holds the same ${r.compared} event(s), byte for byte, and its chain verifies (head ${r.head.seq}, ${r.head.hash})`);
    });
}
