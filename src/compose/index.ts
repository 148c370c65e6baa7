/**
 * Composition: how a running process is assembled from the rooms, with an ordered stop. It may
 * import any room, the server among them. Today it holds the console in a cluster; the embedded
 * control plane, the operator and the plugin host still compose in src/app (DESIGN.md).
 */

/** The console and the API in a cluster over its shared log, with the cluster's identity. */
export { startClusterConsole } from "./cluster-console.js";
export type { ClusterConsole, ClusterConsoleOptions } from "./cluster-console.js";
