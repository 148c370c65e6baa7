/**
 * The running WebAssembly plugins as the cluster's plugin host reads them (ADR 0080): for each
 * plugin whose desired workload runs in the plugin host, its image, its module, the origins of
 * its effective egress and the instance Secrets it was granted, encoded with the pure model's codec for the `openfief-plugin-host` ConfigMap.
 */
import { encodeHostedPlugins } from "../plugins/index.js";
import type { HostedPluginInput, HostedSecret } from "../plugins/index.js";
import { entryToHost } from "./allowlists.js";
import type { WorkloadState } from "./folds.js";
import type { Projector } from "./projector.js";

/**
 * The ConfigMap data for the running WebAssembly plugins (call `catchUp()` first), with the
 * instance Secrets `secretsOf` says each was granted (none when not given).
 */
export async function pluginHostConfigData(projector: Projector, secretsOf?: (name: string) => Promise<readonly HostedSecret[]>): Promise<Record<string, string>> {
  const plugins = new Map<string, HostedPluginInput>();
  for (const [name, w] of await projector.rows<WorkloadState>("desired_workloads")) {
    if (!w.running || w.runtime !== "wasm" || w.module === null || w.image === null) continue;
    const secrets = secretsOf === undefined ? [] : await secretsOf(name);
    plugins.set(name, { image: w.image, module: w.module, egress: w.allowList.map(entryToHost), ...(secrets.length === 0 ? {} : { secrets }) });
  }
  return encodeHostedPlugins(plugins);
}
