/**
 * The tables beside the log (the egress counts, the decision check, the projections' rows) in
 * SQLite's terms: nothing to make here. SQLite's store makes each of these tables itself when it is
 * first used, and drops and makes it again when its version changes (whoever writes the file may
 * create tables in it). PostgreSQL's migration of this name makes them as the schema's owner, since
 * the application's role there may create nothing (docs/adr/0140). The name is on both lists so that
 * both stores follow one list of migrations (docs/adr/0128).
 */
import type { Kysely } from "kysely";

export async function up(_db: Kysely<unknown>): Promise<void> {
  // Nothing: see above.
}

export async function down(_db: Kysely<unknown>): Promise<void> {
  // Nothing: see above.
}
