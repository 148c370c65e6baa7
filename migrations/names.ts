/**
 * The names of every migration, in order, without loading them: the store checks these against
 * kysely's bookkeeping table and loads kysely and the migrations only when one is missing. A test
 * (`migrations/names.test.ts`) pins that this list and `index.ts` name the same migrations.
 */
export const MIGRATION_NAMES: readonly string[] = ["0001_events", "0002_projection_checkpoints", "0006_chain_checkpoint", "0007_modules", "0008_stream_type_index_without_decisions", "0009_tables_beside_the_log", "0010_log_tree", "0011_deliveries"];
