/** The Kubernetes adapter's public surface (issue 8): target, source, status, leader election, health, operator. */
export { apiError, httpStatus, KubeError, KubeErrorCode } from "./errors.js";
export { healthHandler, startHealthServer, type HealthOptions, type HealthState } from "./health.js";
export { LEASE_NAME, LeaderElector, type LeaderElectorOptions } from "./leader.js";
export { deployedFromStatus, loadKubeConfig, runOperator, type OperatorCheckpointSettings, type OperatorContext, type OperatorOptions, type ReconcilerFactory } from "./operator.js";
export type { ClusterReconciler, PluginMeta } from "./ports.js";
export { KubernetesSource, type CustomResource, type SourceCallbacks, type SourceOptions, type Timers } from "./source.js";
export { keepTransitionTimes, pluginStatus, PluginStatusWriter, reasonFromCode, type Condition, type PluginStatus, type PluginStatusInput, type PluginStatusWriterOptions, type SignatureState } from "./status.js";
export {
  allowListFieldManager,
  pluginHostFieldManager,
  KubernetesTarget,
  MANAGED_BY,
  MANAGED_BY_LABEL,
  OPERATOR_FIELD_MANAGER,
  PLUGIN_LABEL,
  WORKLOAD_KINDS,
  type ApplyRecord,
  type KubernetesTargetOptions,
} from "./target.js";
export { readTrustedSigners, signersFromConfigMapData, TRUSTED_SIGNERS_KEY } from "./trusted-signers.js";
export { LOG_VERIFIER_CONFIGMAP, publishLogVerifier, readLogVerifier } from "./log-verifier.js";
export type { PublishedLogVerifier } from "./log-verifier.js";
export type { DeployedStatus } from "./ports.js";
export { ClusterIdentity, type AccessQuestion, type ClusterIdentityOptions, type ReviewedUser, type TokenReviewResult } from "./identity.js";
