/**
 * The last point of the hash chain a walk verified, so `openfief up` and `reconcile` can check the
 * chain before acting by walking only the rows after it. Bookkeeping, not audit: losing or
 * editing it only makes the next walk start from the first event.
 */
import { sql } from "kysely";
import type { Kysely } from "kysely";

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE chain_checkpoint (
      id   INTEGER PRIMARY KEY CHECK (id = 1),
      seq  INTEGER NOT NULL,
      hash TEXT    NOT NULL
    ) STRICT`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE chain_checkpoint`.execute(db);
}
