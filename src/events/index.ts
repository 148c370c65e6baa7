/** The event store's public surface. */
export { openStore, toStoredEvent, EVENT_COLUMNS } from "./store.js";
export type { EventStore, StoreOptions, AppendOptions, EventListener, StoreTables, EventRow } from "./store.js";
export type { ChainPoint, GuardsResult, NewEvent, StoredEvent, ReadFilter, VerifyResult } from "./types.js";
export { StoreError, StoreErrorCode } from "./errors.js";
export type { EventProblem } from "./errors.js";
export { EventRegistry, defineEvent } from "./registry.js";
export type { EventDefinition, EventType, PastVersion } from "./registry.js";
export { catalog, createCatalog } from "./catalog.js";
export type * from "./catalog.js";
export { isEventOf, manifestDigest, verdictKey } from "./catalog.js";
export { GENESIS_HASH, rowHash } from "./hash.js";
export { pluginStream, egressStream, gatewayStream, parseStream, isPluginName, SINGLETON_STREAMS, STREAM_TYPE_INDEXED, UNINDEXED_TYPES } from "./streams.js";
/** `egress/-`: the egress proxy's refusals before identity. */
export { EGRESS_ANONYMOUS_STREAM } from "./streams.js";
