/**
 * Composition: how a running process is assembled from the rooms, with an ordered stop — the
 * embedded control plane behind `openfief up`, the operator's reconciler, the plugin host (in `up`
 * and in the cluster), the views' listeners, the console in a cluster. It may import any room, the
 * server and the connector server among them; only the CLI (and tests) import it. The use cases
 * these processes run are src/app's.
 */

/** `openfief up` as one value: lock, runtime, egress, the reconcile loop; an ordered stop. */
export { startControlPlane } from "./control-plane.js";
export type { ControlPlane, ControlPlaneOptions } from "./control-plane.js";
/** A control plane's parts from options: store, verifier, target, reconciler. */
export { EMBEDDED_TOPOLOGY, imageSources, openRuntime, SHIPPED_CATALOG } from "./runtime.js";
export type { ImageSourceFor, Runtime, RuntimeOptions } from "./runtime.js";
/** Cluster mode: the reconciler driven by Plugin and PluginGrant resources, status written back. */
export { CLUSTER_ACTOR, clusterReconcilerFactory, coreListenFromEnv, clusterReconcilerFactoryWith, kubeChange, observe, observePrevious, recordKubeChanges, signatureState, topologyFromEnv } from "./cluster.js";
/** WebAssembly plugins run by this process: the plugin host fed what the log says runs. */
export { startHostedPlugins } from "./hosted-plugins.js";
export type { HostedPlugins, HostedPluginsOptions } from "./hosted-plugins.js";
/** `openfief plugin-host`: the cluster's plugin host, following openfief-plugin-host and serving ConnectorService (ADRs 0080, 0081). */
export { startClusterPluginHost } from "./plugin-host-loader.js";
export type { ClusterPluginHost, ClusterPluginHostOptions } from "./cluster-plugin-host.js";
/** The views part of `up` (keys, the mint, the gateway and the plugin proxy), started by `startControlPlane`. */
export type { RunningViews, ViewsOptions } from "./views.js";
/** A listener that could not bind, as a refusal naming it. */
export { isListenError, listenRefused } from "./listeners.js";
export type { Listener } from "./listeners.js";
/** The console and the API in a cluster over its shared log, with the cluster's identity. */
export { startClusterConsole } from "./cluster-console.js";
export type { ClusterConsole, ClusterConsoleOptions } from "./cluster-console.js";
export { ConsoleLogKey, logVerifierPublisher, publishedKeyProblem, LOG_KEY_REFRESH_MS } from "./cluster-log-key.js";
export type { LogVerifierPublisher } from "./cluster-log-key.js";
export { checkOperatorWitnesses, startOperatorCheckpoints } from "./operator-checkpoints.js";
export type { OperatorCheckpointContext, OperatorCheckpoints } from "./operator-checkpoints.js";
export { connectSync, CONNECTOR_URL_ENV, coreAccount, failureOf, startOperatorSyncs } from "./operator-syncs.js";
export type { OperatorSyncContext, OperatorSyncs, OperatorSyncSettings } from "./operator-syncs.js";
