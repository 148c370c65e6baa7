/** Rows of the SQLite `events` table and how they become events. */
import type { EventRegistry } from "../registry.js";
import type { StoredEvent } from "../types.js";

/** A row of `events` as SQLite returns it (see {@link EVENT_COLUMNS}). */
export interface EventRow {
  seq: number; stream: string; version: number; type: string; schema_version: number; time: string;
  actor: string; caused_by: number | null; data: string; prev_hash: string; hash: string;
}

/** The columns of `events`, in the order {@link EventRow} names them, for queries written in SQL. */
export const EVENT_COLUMNS = "seq, stream, version, type, schema_version, time, actor, caused_by, data, prev_hash, hash";

/** Turns a row into an event, its data read through the registry's upcasters. */
export function toStoredEvent(registry: EventRegistry, r: EventRow): StoredEvent {
  const raw = JSON.parse(r.data) as unknown;
  const def = registry.get(r.type);
  const data = def === undefined ? raw : def.upcast(r.schema_version, raw);
  return {
    seq: r.seq, stream: r.stream, version: r.version, type: r.type, schemaVersion: r.schema_version, time: r.time,
    actor: r.actor, causedBy: r.caused_by, data, prevHash: r.prev_hash, hash: r.hash,
  };
}
