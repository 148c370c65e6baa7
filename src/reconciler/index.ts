/** The reconcile loop (observe → decide → apply, each step leaving events) and its targets. */

/** The loop over every plugin of the log: verify, decide, compile, apply. */
export { Reconciler } from "./reconciler.js";
export type { PluginResult, ReconcilerDeps } from "./reconciler.js";
/** Where desired state goes: the port, and the embedded default that writes YAML to a folder. */
export type { KubeObject, Target } from "./target.js";
export { DirectoryTarget } from "./directory-target.js";
/** Whether a process runs: the directory target's stale temp files and the data folder's lock ask it. */
export { processAlive } from "./process-alive.js";
/** Carrying out uninstall intents, once each, converging after a crash (docs/adr/0162). */
export { completeUninstalls, openIntent, pluginNames } from "./purge.js";
export type { PurgeTarget, Uninstalled } from "./purge.js";
