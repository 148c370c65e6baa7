/**
 * Stored rows turned into typed events. Every row was validated against its type's schema when it
 * was appended, and an older row is read through its type's upcasters, so narrowing it to the
 * catalog's union here is the one cast the union needs (a row adapter, as `check:house` counts them).
 */
import type { KnownEvent } from "./catalog.js";
import type { RawEventRow } from "./chain.js";
import type { EventRegistry } from "./registry.js";
import type { StoredEvent } from "./types.js";

/** An event whose data was validated against its type's current schema (appended just now). */
export function validatedEvent(e: StoredEvent): KnownEvent {
  return e as KnownEvent;
}

/** A stored row as an event, its data parsed and upcast to its type's current shape. */
export function eventOfRow(registry: EventRegistry, r: RawEventRow): KnownEvent {
  const raw = JSON.parse(r.data) as unknown;
  const def = registry.get(r.type);
  const data = def === undefined ? raw : def.upcast(r.schemaVersion, raw);
  return {
    seq: r.seq, stream: r.stream, version: r.version, type: r.type, schemaVersion: r.schemaVersion, time: r.time,
    actor: r.actor, causedBy: r.causedBy, data, prevHash: r.prevHash, hash: r.hash,
  } as KnownEvent;
}
