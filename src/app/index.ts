/**
 * The application layer: the use cases an owner or operator runs, and the composition of a
 * running control plane. The faces (CLI, HTTP API, console) call these; they hold no domain logic.
 */

/** A control plane's parts from options: store, verifier, target, reconciler. */
export { EMBEDDED_TOPOLOGY, openDataStore, openRuntime, SHIPPED_CATALOG } from "./runtime.js";
export type { Runtime, RuntimeOptions } from "./runtime.js";
/** Cluster mode: the reconciler driven by Plugin and PluginGrant resources, status written back. */
export { CLUSTER_ACTOR, clusterReconcilerFactory, kubeChange, observe, observePrevious, recordKubeChanges, signatureState, topologyFromEnv } from "./cluster.js";
/** The words the faces share: `why`'s codes, events and pending permissions as sentences. */
export { blockerText, describeEvent, describePending, describeRule, hostPort, reasonText, viewDecisionSentences, whySentences } from "./wording.js";
export type { PendingLike } from "./wording.js";
export { describeDecision, lastCallText, problemText, runtimeText, statusText } from "./wording.js";
/** Errors: one type, one code registry, each code with its exit code and HTTP status. */
export { APP_ERRORS, AppError, toAppError } from "./errors.js";
export type { AppErrorCode } from "./errors.js";
/** Who a use case acts for. */
export { OWNER_CLI, webActor } from "./actor.js";
export type { Actor } from "./actor.js";
/** Plugin and PluginGrant documents (YAML or JSON), with caps checked before parsing. */
export { checkResourceSize, MAX_RESOURCE_BYTES, MAX_RESOURCE_DOCUMENTS, parseResources } from "./resources.js";
export type { Resource } from "./resources.js";
/** The owner's writes: apply, delete, approve, each expecting the version it read before its facts. */
export { applyResources, approve, deletableKind, deleteResource, grantWithPending, pendingOf } from "./owner-edits.js";
export type { Applied, Approved, DeletableKind, Deleted } from "./owner-edits.js";
/** `get plugins`. */
export { lastCallOf, listPlugins, shortImage } from "./plugins.js";
export type { LastCallView, PluginProblem, PluginRow, PluginStatus } from "./plugins.js";
/** A data folder: its files, the lock that keeps a second `up` off it, private key files. */
export { checkPrivateFile, DEFAULT_DATA_DIR, lockDataDir, lockHolder, logFile, requireLog, runningEgress, storeFile } from "./data-dir.js";
export type { DataLock, LockHolder } from "./data-dir.js";
/** The settings `up` was started with, saved in the data folder. */
export { loadSettings, mergeSettings, saveSettings } from "./settings.js";
export type { Settings } from "./settings.js";
/** The log's integrity: the chain, its guards, re-checked decisions. */
export { assertLogHolds, checkLogDecisions, verifyLog } from "./integrity.js";
export type { LogIntegrity } from "./integrity.js";
/** `openfief up` as one value: lock, runtime, egress, the reconcile loop; an ordered stop. */
export { startControlPlane } from "./control-plane.js";
export type { ControlPlane, ControlPlaneOptions } from "./control-plane.js";
/** The shipped demo. */
export { applyDemoFolder, demoSettings, EXAMPLES, resetDataDir } from "./demo.js";
/** Egress tokens for a plugin, signed by the data folder's embedded key. */
export { checkEmbeddedKey, mintPluginEgressToken } from "./tokens.js";
/** WebAssembly plugins run by this process: the plugin host fed what the log says runs. */
export { startHostedPlugins } from "./hosted-plugins.js";
export type { HostedPlugins, HostedPluginsOptions } from "./hosted-plugins.js";
