/**
 * Every migration, in order. A static provider (rather than kysely's FileMigrationProvider) so
 * the migrations load the same way under tsx, vitest and a bundle (STACK.md, gotcha 4).
 */
import type { Migration, MigrationProvider } from "kysely";
import * as m0001 from "./0001_events.js";
import * as m0002 from "./0002_projection_checkpoints.js";
import * as m0006 from "./0006_chain_checkpoint.js";
import * as m0007 from "./0007_modules.js";
import * as m0008 from "./0008_stream_type_index_without_decisions.js";
import * as m0009 from "./0009_tables_beside_the_log.js";
import * as m0010 from "./0010_log_tree.js";
import * as m0011 from "./0011_deliveries.js";

/** The migrations by name; kysely applies them in name order. */
export const migrations: Readonly<Record<string, Migration>> = {
  "0001_events": m0001,
  "0002_projection_checkpoints": m0002,
  "0006_chain_checkpoint": m0006,
  "0007_modules": m0007,
  "0008_stream_type_index_without_decisions": m0008,
  "0009_tables_beside_the_log": m0009,
  "0010_log_tree": m0010,
  "0011_deliveries": m0011,
};

/** A MigrationProvider over {@link migrations}. */
export const migrationProvider: MigrationProvider = {
  getMigrations: () => Promise.resolve({ ...migrations }),
};
