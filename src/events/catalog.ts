/**
 * The event types of the control plane, their data shapes and schemas, composed from one module
 * per area (`catalog/*-events.ts`). Each event type's JSON Schema is built field by field against
 * its TypeScript data type (`catalog/schema.ts`), so {@link EventDataMap} and the schemas the
 * store validates with cannot drift apart. Nested specs and Kubernetes objects are any JSON (the
 * pure model validates them); the envelope of each event's data is strict.
 */
import { defineEgressEvents, type EgressEventData } from "./catalog/egress-events.js";
import { defineGatewayEvents, type GatewayEventData } from "./catalog/gateway-events.js";
import { defineHostEvents, type HostEventData } from "./catalog/host-events.js";
import { defineLogEvents, type LogEventData } from "./catalog/log-events.js";
import { definePluginEvents, type PluginEventData } from "./catalog/plugin-events.js";
import { defineCoreEvents, type CoreEventData } from "./catalog/core-events.js";
import { defineSyncEvents, type SyncEventData } from "./catalog/sync-events.js";
import { EventRegistry } from "./registry.js";
import type { NewEvent, StoredEvent } from "./types.js";

export type * from "./catalog/plugin-events.js";
export { manifestDigest, verdictKey } from "./catalog/plugin-events.js";
export type * from "./catalog/egress-events.js";
export type * from "./catalog/host-events.js";
export type * from "./catalog/gateway-events.js";
export type * from "./catalog/log-events.js";
export type * from "./catalog/sync-events.js";
export type * from "./catalog/core-events.js";
export { CORE_REFUSAL_CODES } from "./catalog/core-events.js";
export { LOG_STREAM } from "./catalog/log-events.js";

/** Data type of each event type of the catalog. */
export interface EventDataMap extends PluginEventData, EgressEventData, HostEventData, GatewayEventData, LogEventData, SyncEventData, CoreEventData {}

/** Every event type name of the catalog. */
export type EventTypeName = keyof EventDataMap & string;

/**
 * A stored event of type `T`, its data typed (Emmett's `Event<Type, Data>`). Distributes over a
 * union of types, so `EventOf<"a" | "b">` is a union discriminated by `type`.
 */
export type EventOf<T extends EventTypeName> = T extends EventTypeName ? StoredEvent<EventDataMap[T]> & { readonly type: T } : never;

/**
 * Any stored event of the catalog: a union discriminated by `type`, so `switch (e.type)` narrows
 * `e.data` with no cast.
 */
export type KnownEvent = EventOf<EventTypeName>;

/** An event of type `T` to append, its data typed. */
export type NewEventOf<T extends EventTypeName> = NewEvent & { readonly type: T; readonly data: EventDataMap[T] };

/** Any event of the catalog to append. */
export type KnownNewEvent = { [T in EventTypeName]: NewEventOf<T> }[EventTypeName];

/** True when `e` is of one of `types` (narrows an event read through a filter the compiler cannot see). */
export function isEventOf<T extends EventTypeName>(e: StoredEvent, types: readonly T[]): e is EventOf<T> {
  return (types as readonly string[]).includes(e.type);
}

/** Builds a registry holding every event type of the control plane. */
export function createCatalog(): EventRegistry {
  const r = new EventRegistry();
  definePluginEvents(r);
  defineEgressEvents(r);
  defineHostEvents(r);
  defineGatewayEvents(r);
  defineLogEvents(r);
  defineSyncEvents(r);
  defineCoreEvents(r);
  return r;
}

/** The registry every store uses unless told otherwise. */
export const catalog: EventRegistry = createCatalog();
