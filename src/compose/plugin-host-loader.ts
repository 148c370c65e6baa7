/**
 * `openfief plugin-host`'s use case, loaded when it starts: it brings the Connect stack and the
 * connector contract's descriptors, which every other command would otherwise compile and build
 * at start (ADR 0008).
 */
import type { ClusterPluginHost, ClusterPluginHostOptions } from "./cluster-plugin-host.js";

/** Starts the cluster's plugin host (see `cluster-plugin-host.ts`). */
export async function startClusterPluginHost(o: ClusterPluginHostOptions): Promise<ClusterPluginHost> {
  // Destructured: the bundle's test checks each name taken from a lazily loaded chunk.
  const { startClusterPluginHost: start } = await import("./cluster-plugin-host.js");
  return start(o);
}
