/**
 * `openfief plugin-host`'s use case, loaded when it starts: it brings the Connect stack and the
 * connector contract's descriptors, which every other command would otherwise compile and build
 * at start (ADR 0008).
 */
import type { ClusterPluginHost, ClusterPluginHostOptions } from "./cluster-plugin-host.js";

/** Starts the cluster's plugin host (see `cluster-plugin-host.ts`). */
export async function startClusterPluginHost(o: ClusterPluginHostOptions): Promise<ClusterPluginHost> {
  const m = await import("./cluster-plugin-host.js");
  return m.startClusterPluginHost(o);
}
