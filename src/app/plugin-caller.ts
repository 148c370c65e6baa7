/**
 * What the use cases that call a running plugin (a connector's sync, a file's import) need of the
 * plugin host: one call under the plugin's effective permissions. The host this process composes
 * (src/compose's hosted plugins) is one; a use case never starts a host itself.
 */
import type { CallResult } from "../host/index.js";
import type { JsonValue } from "../plugins/index.js";

/** Calls a running WebAssembly plugin once under its effective permissions. */
export interface PluginCaller {
  call(name: string, method: string, params: JsonValue): Promise<CallResult>;
}
