/** The event log's public surface: its port (asynchronous, free of SQL), the tables beside it, and the SQLite adapter. */
export type { AppendOptions, EgressCandidateQuery, EgressCandidates, EventListener, EventLog, EventLookups, LogTree, PageFilter } from "./port.js";
export type {
  Cell, DecisionCheckList, DeliveryRow, DeliveryTable, DecisionCheckTable, DecisionCheckTotals, EgressCountRow, EgressCountTable, EgressDecisionFacts, LogTables, ModuleTable,
  ProjectionChanges, ProjectionTables, ProjectionTableSpec, StoredModule, StoredCheckpoint, StoredTile, TreeTable,
} from "./tables.js";
/** The embedded default: the log in one SQLite file. */
export { openStore } from "./store.js";
export type { StoreOptions } from "./store.js";
/** The egress proxy's writer thread's connection: batches within a deadline. */
export { openLogWriter } from "./writer.js";
export type { LogWriter, LogWriterOptions } from "./writer.js";
export type { ChainPoint, GuardsResult, NewEvent, StoredEvent, ReadFilter, VerifyResult } from "./types.js";
export { StoreError, StoreErrorCode } from "./errors.js";
export type { EventProblem } from "./errors.js";
export { EventRegistry, defineEvent, loadEventValidation } from "./registry.js";
export type { EventDefinition, EventType, PastVersion } from "./registry.js";
export { catalog, createCatalog } from "./catalog.js";
export type * from "./catalog.js";
export { isEventOf, manifestDigest, verdictKey } from "./catalog.js";
export { GENESIS_HASH, rowHash } from "./hash.js";
export { pluginStream, egressStream, gatewayStream, coreStream, parseStream, isPluginName, SINGLETON_STREAMS } from "./streams.js";
/** `egress/-`: the egress proxy's refusals before identity. */
export { EGRESS_ANONYMOUS_STREAM, TRUST_STREAM } from "./streams.js";
/** `core/-`: the core API's refusals before identity (docs/adr/0196). */
export { CORE_ANONYMOUS_STREAM } from "./streams.js";
export { CORE_REFUSAL_CODES } from "./catalog.js";
/** The one budget for refusals a caller can repeat (the gateway's, the egress proxy's before identity), and capped caller fields. */
export { RefusalBudget, REFUSAL_BUDGET_DEFAULTS, refusalBudgetProblem } from "./refusal-budget.js";
export type { RefusalBudgetLimits, RefusalSummary, Sighting, BudgetAdmission } from "./refusal-budget.js";
export { capField, textDigest, CALLER_FIELD_MAX } from "./capped.js";
export type { Capped } from "./capped.js";
export { GATEWAY_GATES, GATEWAY_RULES_VERSION } from "./catalog/gateway-events.js";
export { EGRESS_FAILURE_CODES, egressCodeOutcome, egressDecisionOutcome } from "./catalog/egress-events.js";
export type { EgressOutcome } from "./catalog/egress-events.js";
/** The event log on PostgreSQL (the cluster's one log), its schema's migrations and the roles it runs as. */
export { openPostgresLog, migratePostgres, postgresSetupSql } from "./postgres-door.js";
export type { PostgresLogOptions, PostgresTimeouts, MigrateOptions, RolesSpec } from "./postgres/index.js";
/** A log copied to another store row for row, then compared byte for byte. */
export { migrateLog } from "./migrate.js";
export type { MigrateResult, MigrateLogOptions } from "./migrate.js";
/** The Merkle tree over the log: its signed checkpoints, written now or on a schedule (docs/adr/0141). */
export { writeCheckpoint, CheckpointSchedule, CHECKPOINT_ACTOR, DEFAULT_CHECKPOINT_EVERY, DEFAULT_CHECKPOINT_INTERVAL_MS } from "./tree-checkpoints.js";
export type { CheckpointScheduleOptions } from "./tree-checkpoints.js";
export { LOG_STREAM } from "./catalog.js";
export { chainBytes } from "./hash.js";
