/**
 * Every migration, in order. A static provider (rather than kysely's FileMigrationProvider) so
 * the migrations load the same way under tsx, vitest and a bundle (STACK.md, gotcha 4).
 */
import type { Migration, MigrationProvider } from "kysely";
import * as m0001 from "./0001_events.js";
import * as m0002 from "./0002_projection_checkpoints.js";
import * as m0003 from "./0003_modules.js";
import * as m0006 from "./0006_chain_checkpoint.js";

/** The migrations by name; kysely applies them in name order. */
export const migrations: Readonly<Record<string, Migration>> = {
  "0001_events": m0001,
  "0002_projection_checkpoints": m0002,
  "0003_modules": m0003,
  "0006_chain_checkpoint": m0006,
};

/** A MigrationProvider over {@link migrations}. */
export const migrationProvider: MigrationProvider = {
  getMigrations: () => Promise.resolve({ ...migrations }),
};
