/**
 * A projection: a pure fold of some event types, keyed (one state per plugin, per digest…), and
 * the table it is written to. The projector runs it; the fold itself is tested without a database.
 */
import type { Cell, EventTypeName, KnownEvent, ProjectionTableSpec } from "../events/index.js";

export type { Cell } from "../events/index.js";

/** A fold of the log into one table. */
export interface Projection<S> extends ProjectionTableSpec {
  /** Unique; also the checkpoint's name. */
  readonly name: string;
  /** Bump when the table or the fold changes: the projection is then rebuilt from zero. */
  readonly version: number;
  /** The event types it folds. */
  readonly types: readonly EventTypeName[];
  /** The key (row) an event concerns; null to skip it. */
  keyOf(e: KnownEvent): string | null;
  /** Pure: the key's next state; undefined removes the row. */
  evolve(state: S | undefined, e: KnownEvent): S | undefined;
  /** Its table: `key` TEXT PRIMARY KEY then `columns`. */
  readonly table: string;
  readonly columns: readonly { readonly name: string; readonly type: "TEXT" | "INTEGER" }[];
  toRow(state: S): readonly Cell[];
  fromRow(row: readonly Cell[]): S;
}

/** JSON text of a value, or null. */
export function json(v: unknown): string | null {
  return v === null || v === undefined ? null : JSON.stringify(v);
}

/** Parses JSON text written by {@link json}. */
export function unjson<T>(v: Cell): T {
  return (v === null ? null : JSON.parse(String(v))) as T;
}
