/**
 * The application layer: the use cases an owner or operator runs. The faces (CLI, HTTP API,
 * console, the connector server) call these; they hold no domain logic. How a running process is
 * assembled from the rooms is src/compose's.
 */

/** What a running process hands an HTTP face, and what the face hands back; the views part as the console sees it. */
export type { CoreFace, Face, FaceContext, Readiness, ViewFrame, ViewsFace } from "./face.js";

/** The words the faces share: `why`'s codes, events and pending permissions as sentences. */
export { blockerText, describeEvent, describePending, describeRule, egressDecisionText, egressReasonText, hostPort, pendingItems, reasonText, viewDecisionSentences, whySentences } from "./wording.js";
export type { EventContext, PendingLike } from "./wording.js";
export { describeDecision, lastCallText, problemText, removalText, removedHeadline, removedInstanceText, runtimeText, statusText } from "./wording.js";
export type { RemovalWords } from "./wording.js";
/** Removed instances: what a deleted or uninstalled plugin did stays, shown as from a removed instance (docs/adr/0195). */
export { currentRemoval, eventRemoval, eventRemovals, markRemovedDeliveries, markRemovedDelivery, removalAfter } from "./removed.js";
export type { LogPoint, MarkedDelivery, RemovalCache, RemovalKind, RemovedInstance } from "./removed.js";
/** Verdicts as what they mean, blockers, grant edits as what they changed, outcomes, the embedded mode's objects. */
export {
  blockerSubject, containerText, DESCRIBED_TYPES, embeddedFolder, grantChange, objectsOnlyNote, OUTCOME_TEXT, outcomeText, refusalText, shortRefs, signersText,
  verdictCell, verdictHelp, verdictText, verdictWord, catalogText, catalogObservedText, utcTime,
} from "./wording.js";
/** The catalog's word on an image, read from the log: verified since when, or which entry does not match. */
export { catalogView } from "./catalog-view.js";
export type { CatalogView } from "./catalog-view.js";
/** Errors: one type, one code registry, each code with its exit code and HTTP status. */
export { APP_ERRORS, AppError, toAppError } from "./errors.js";
export type { AppErrorCode } from "./errors.js";
/** Who calls and from where, read the same way by every face: the session presented, and the Origin rule for writes. */
export { callerHeaders, consoleCallerGate, cookieName, presentedBy, readCookie, writeOriginProblem } from "./caller.js";
export type { CallerHeaders, ConsoleOrigins, Presented } from "./caller.js";
/** Who a use case acts for. */
export { kubeActor, OWNER_CLI, webActor } from "./actor.js";
/** The console in a cluster: TokenReview sign-in, SubjectAccessReview roles, approvals written as the user. */
export { clusterRefusal, kubeClusterAccess, ownerQuestion, viewerQuestion } from "./cluster-access.js";
export type { ClusterAccess, ClusterAccessOptions, ClusterUser } from "./cluster-access.js";
export type { Actor } from "./actor.js";
/** Plugin and PluginGrant documents (YAML or JSON), with caps checked before parsing. */
export { checkResourceSize, MAX_RESOURCE_BYTES, MAX_RESOURCE_DOCUMENTS, parseResources } from "./resources.js";
export type { Resource } from "./resources.js";
/** The owner's writes: apply, delete, approve, each expecting the version it read before its facts. */
export { applyResources, approve, BLOCKER_REFUSAL, deletableKind, deleteResource, grantWithPending, pendingOf } from "./owner-edits.js";
export type { Applied, Approved, DeletableKind, Deleted } from "./owner-edits.js";
/** Uninstall with --purge: a recorded intent, then idempotent steps that converge after a crash (docs/adr/0162). */
export { folderPurgeTarget, requestUninstall, uninstallPlan, uninstallPlugin } from "./uninstall.js";
export type { UninstallPlan, UninstallRequest, UninstallResult } from "./uninstall.js";
/** `get plugins`. */
export { lastCallOf, listPlugins, shortImage } from "./plugins.js";
export type { LastCallView, PluginProblem, PluginRow, PluginStatus, SignatureView } from "./plugins.js";
/** A data folder: its files, the lock that keeps a second `up` off it, private key files. */
export {
  checkDataDir, checkPrivateFile, DATA_DIR_MODE, DATA_FILE_MODE, DEFAULT_DATA_DIR, lockDataDir, lockHolder, logFile, openDataDir, openDataStore, privateDataFile, requireLog, runningEgress, storeFile, tightenedText,
} from "./data-dir.js";
export type { DataLock, LockHolder, Tightened } from "./data-dir.js";
/** Where a command's log is (`--store`, `OPENFIEF_STORE`), and opening it: a SQLite file or a PostgreSQL database. */
export { parseStoreLocation, readStoreFile, shownUrl, storeLocationOf } from "./store-location.js";
export type { StoreFlags, StoreLocation } from "./store-location.js";
export { initPostgresStore, migrateStore, openLogAt, storeSetupSql, storeText } from "./open-log.js";
export type { OpenLogOptions } from "./open-log.js";
/** The settings `up` was started with, saved in the data folder. */
export { checkLimitsSettings, loadSettings, mergeSettings, saveSettings } from "./settings.js";
export type { Settings } from "./settings.js";
/** The log's integrity: the chain, its guards, re-checked decisions. */
export { assertLogHolds, chainHead, checkLogDecisions, decisionsCheckLines, integrityReport, verifyLog } from "./integrity.js";
export type { ChainHead, DecisionsCheck, IntegrityReport, LogIntegrity } from "./integrity.js";
/** A file the product ships (from the sources and from the CLI's bundle alike), for the faces' own assets. */
export { shippedFile } from "../trust/index.js";
/** The shipped demo. */
export { applyDemoFolder, demoSettings, EXAMPLES, resetDataDir } from "./demo.js";
/** Egress tokens for a plugin, signed by the data folder's embedded key. */
export { checkEmbeddedKey, mintPluginEgressToken } from "./tokens.js";
/** A plugin's WebAssembly module installed in a plugin host, by digest, under its signed manifest: the one install both hosts call. */
export { installModule, MAX_MODULE_CONFIG_BYTES } from "./module-install.js";
export type { ModuleInstalled, ModuleSourceFor, ModuleToInstall } from "./module-install.js";
/** Plugins calling the core (docs/adr/0196): the verifier port and its adapters (JWKS, TokenReview), and the core API's use case with its refusals recorded within a budget. */
export { jwksPluginVerifier, MAX_PLUGIN_TOKEN_CHARS, PLUGIN_TOKEN_ALGORITHMS, reviewerPluginVerifier, tokenShapeProblem } from "./plugin-identity.js";
export type { JwksVerifierOptions, PluginTokenVerifier, TokenCheck, TokenRefusal } from "./plugin-identity.js";
export { bearer, CORE_ACTOR, CORE_API_LIMITS, CORE_CALLS, CORE_REFUSALS, CoreApi, coreInstance } from "./core-api.js";
export type { CoreAnswer, CoreApiLimits, CoreApiPorts, CoreCall, CoreInstance, CoreRate, CoreRefusalStatus, CoreRequest } from "./core-api.js";
/** The core's token as the plugin host checks it: the cluster's JWKS, the core's subject, one `openfief-plugin:<instance>` audience. */
export { CoreTokenVerifier, instanceOfAudience } from "./core-token.js";
export type { CoreTokenRefusal, CoreTokenResult } from "./core-token.js";
/** A plugin call's answer, as the faces that carry calls (the connector server) hand it on. */
export type { CallResult } from "../host/index.js";
/** The log read and followed with the filters of `openfief log`, paged by sequence number. */
export { checkLogQuery, eventSentence, eventSentences, eventTypes, followLog, MAX_LOG_TYPES, parseCount, parseTime, pluginVerdicts, readLog, readLogTail, requireKnownPlugin } from "./log.js";
export type { FollowOptions, LogPage, LogQuery, LogTail } from "./log.js";
/** Replay: the state as of a sequence number or a time. */
export { parseReplayPoint, replay, requireWithinLog } from "./replay.js";
export type { Replayed, ReplayedPlugin, ReplayPoint } from "./replay.js";
/** One plugin as an owner looks at it: why, grant, what runs, its timeline, what an approval would add. */
export { approvalInFlight, explain, MAX_TIMELINE, pendingApproval, pendingApprovals, pluginsOverview, pluginTimeline, pluginView } from "./plugin-view.js";
export type { ApprovalInFlight, AskedFor, Explained, PendingApproval, PermissionLists, PluginsOverview, PluginView, Timeline, TimelineEntry } from "./plugin-view.js";
/** The egress proxy's decisions by plugin, host and outcome, and counted over time. */
export { EGRESS_OUTCOMES, egressDecisions, egressSummary, MAX_EGRESS_BUCKETS, MAX_EGRESS_SCAN } from "./egress-view.js";
export type { EgressBucket, EgressDecisionRow, EgressDestination, EgressOutcome, EgressPage, EgressPluginSummary, EgressQuery, EgressSummary, EgressSummaryOptions } from "./egress-view.js";
/** The console's users: one-time sign-in links, ES256 sessions for exactly one audience, roles. */
export { checkKubeIdentity, checkUserName, defaultUser, MAX_KUBE_GROUPS, runningConsole, signInLink, MAX_SESSION_AGE_SECONDS, MAX_TOKEN_TTL_SECONDS, parseRole, ROLES, SESSION_KEY_FILE, SESSION_TTL_SECONDS, sessionProblemText, Sessions, SIGN_IN_AUDIENCE, SIGN_IN_TTL_SECONDS, USER_AUDIENCE } from "./sessions.js";
export type { KubeIdentity, Minted, Role, SessionCheck, SessionProblem, UserSession, UserSessionVerifier } from "./sessions.js";
/** The control plane's metrics, in the registry `/metrics` serves. */
export { ControlPlaneMetrics } from "./metrics.js";
/** What `why`'s sentences tell an owner to do next, per face. */
export { CLI_STEPS, containerCallRefusal } from "./wording.js";
export type { NextSteps } from "./wording.js";
/** The shapes the use cases answer in, for the faces (which import only this room). */
export type { EventLog, KnownEvent } from "../events/index.js";
/** The model's shapes the use cases answer in. */
export type { GrantSpec, JsonValue, Pending } from "../plugins/index.js";
/** `why`'s answer in codes and facts; what keeps a version from running. */
export type { Blocker, HardBlocker, WhyAnswer } from "../projections/index.js";
/** The views part's settings and constants (the part itself is started by src/compose). */
export { consoleUserRoles, CONSOLE_USER_RULES, VIEW_DEFAULTS, VIEW_KEYS_FILE, JWKS_PATH, KEY_MAX_AGE_SECONDS } from "./view-settings.js";
export type { ViewSettings } from "./view-settings.js";

/** The log's signing key: read from a file or the data folder (made there on first use), its verifier key and origin (docs/adr/0142). */
export { defaultLogName, loadLogKey, LOG_KEY_ENV, LOG_KEY_FILE, newLogSignerKey, readLogKey, writeNewLogKey } from "./log-key.js";
export type { LogKey, LogKeySource } from "./log-key.js";
/** The verifiable log as static files: `/tlog/<path>` and `export-tiles` (docs/adr/0143). */
export { CHECKPOINT_CACHE, CHECKPOINT_TYPE, checkExportDir, exportTiles, latestCheckpoint, publishedPaths, signCheckpointNow, TILE_CACHE, TILE_TYPE, tlogFile } from "./tlog.js";
export type { ExportedTiles, TlogFile } from "./tlog.js";
/** Proofs an auditor takes away: prove, export, their offline checks, and the log against kept checkpoints (docs/adr/0153, 0154). */
export {
  ExportCheck, exportLog, leafEvent, LOG_KEY_TYPES, logVerifier, proveEvent, readCheckpointFile, readInputFile, readVerifierKey, requireFile,
  verifyLogAgainst, verifyProofFile, WITNESS_KEY_TYPES,
} from "./proofs.js";
export type { CheckpointFinding, EventProof, ExportSummary, ExportVerdict, LeafEvent, LineSink, LogAgainstCheckpoints, ProofVerdict } from "./proofs.js";
/** Witnesses on up: checkpoints submitted with C2SP tlog-witness, their cosignatures kept beside the log (docs/adr/0155). */
export { parseWitnessTarget, Witnesses } from "./witnesses.js";
export type { WitnessTarget, WitnessesOptions } from "./witnesses.js";
export { cosignedCheckpoints, witnessStates, WITNESS_TABLE } from "./witness-states.js";
export type { CosignedCheckpoints, WitnessState, WitnessStatus } from "./witness-states.js";
/** Connectors' syncs on their schedules, deliveries kept by digest, and files imported as one batch (docs/adr/0178–0180). */
export { connectorDeliveries, connectorSyncs, hostedConnectors, hostedSync, planSync, scheduleOf, startSyncs, statusOfCode, syncHistory, SyncScheduler, SYNC_ACTOR } from "./sync.js";
export type { ConnectorSyncState, StartSyncsParts, SyncAnswer, SyncConnector, SyncHistory, SyncPlan, SyncPorts } from "./sync.js";
export { BATCH_ID, checkDelivery, dataDirDeliveries } from "./deliveries.js";
/** Deliveries in the log's own database (a cluster's PostgreSQL), and where a log keeps them (docs/adr/0199). */
export { deliveriesOf, logDeliveries } from "./log-deliveries.js";
export type { CheckedDelivery, DeliveryKind, DeliveryRecord, DeliveryStore, StoredDelivery } from "./deliveries.js";
export { importFile, MAX_IMPORT_FILE_BYTES } from "./import-file.js";
export type { ImportFileOptions, ImportOutcome } from "./import-file.js";
/** A running instance's granted Secrets, read from the data folder on each call (docs/adr/0184). */
export { readGrantedSecrets } from "./instance-secrets.js";
export type { GrantedSecretRef } from "./instance-secrets.js";
