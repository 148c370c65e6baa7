/**
 * PostgreSQL: the tables beside the log that are not events (docs/adr/0140), made by the schema's
 * owner because the application's role may create nothing. SQLite's store makes its own when first
 * used; SQLite's migration of this name does nothing.
 *
 * - `proj_egress_counts`: egress decisions counted by unit of time (docs/adr/0100), allowed,
 *   refused by policy and failed to reach (docs/adr/0110).
 * - `proj_decision_check` (one row of totals) and `proj_decision_check_lists` (the egress
 *   re-decider's state per plugin): the incremental decision check, JSON as text.
 * - `projection_rows`: every projection's rows in one table, by the projection's table name and
 *   the row's key, its cells a JSON array. Projections come and go and change their columns with
 *   their version; keeping their rows here needs no table made, altered or dropped at run time.
 *
 * Their checkpoints are in `projection_checkpoints` (0002). Texts compared or ordered use the "C"
 * collation (by bytes, as SQLite orders them).
 */
import { sql } from "kysely";
import type { Kysely } from "kysely";

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE proj_egress_counts (
      level    smallint NOT NULL,
      start    bigint   NOT NULL,
      plugin   text     COLLATE "C" NOT NULL,
      host     text     COLLATE "C" NOT NULL,
      port     integer  NOT NULL,
      allowed  bigint   NOT NULL,
      refused  bigint   NOT NULL,
      failed   bigint   NOT NULL,
      last_seq bigint   NOT NULL,
      PRIMARY KEY (level, start, plugin, host, port)
    )`.execute(db);
  await sql`
    CREATE TABLE proj_decision_check (
      id          integer PRIMARY KEY CHECK (id = 1),
      checked     bigint  NOT NULL,
      diverged    bigint  NOT NULL,
      more        bigint  NOT NULL,
      lists_known boolean NOT NULL,
      divergences text    NOT NULL
    )`.execute(db);
  await sql`
    CREATE TABLE proj_decision_check_lists (
      plugin   text    COLLATE "C" PRIMARY KEY,
      current  text    NULL,
      changed  boolean NOT NULL,
      previous text    NULL
    )`.execute(db);
  await sql`
    CREATE TABLE projection_rows (
      table_name text COLLATE "C" NOT NULL,
      key        text COLLATE "C" NOT NULL,
      cells      text NOT NULL,
      PRIMARY KEY (table_name, key)
    )`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE projection_rows, proj_decision_check_lists, proj_decision_check, proj_egress_counts`.execute(db);
}
