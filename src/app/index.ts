/**
 * The application layer: the use cases an owner or operator runs, and the composition of a
 * running control plane. The faces (CLI, HTTP API, console) call these; they hold no domain logic.
 */

/** A control plane's parts from options: store, verifier, target, reconciler. */
export { EMBEDDED_TOPOLOGY, openDataStore, openRuntime, SHIPPED_CATALOG, storeFile } from "./runtime.js";
export type { Runtime, RuntimeOptions } from "./runtime.js";
/** Cluster mode: the reconciler driven by Plugin and PluginGrant resources, status written back. */
export { CLUSTER_ACTOR, clusterReconcilerFactory, kubeChange, observe, observePrevious, recordKubeChanges, signatureState, topologyFromEnv } from "./cluster.js";
/** The words the faces share: `why`'s codes, events and pending permissions as sentences. */
export { blockerText, describeEvent, describePending, hostPort, reasonText, whySentences } from "./wording.js";
