/**
 * The plugin host's events (seed 003, issue 13). Module and executable events are about code by
 * digest and go to stream `system`; call events are about a plugin and go to `plugin/<name>`.
 * Events carry digests, never module bytes (those are in the `modules` table). Approval is the
 * PluginGrant's (ADR 0013), so there is no `module.approved`.
 */
import type { EventRegistry } from "../registry.js";
import { definer, inNamedStream, inStream, name, opt, req } from "./schema.js";

/** Which tier ran the code. */
export type PluginRuntime = "wasm" | "unconfined";

/** `module.installed`: a WebAssembly module passed the host's checks and was stored. */
export interface ModuleInstalled {
  /** Lowercase hex SHA-256 of the module (seed 003's ValidDigest). */
  digest: string;
  size: number;
}
/** `module.uninstalled`: the module's bytes were removed. */
export interface ModuleUninstalled { digest: string }
/**
 * `plugin.call`: one call that failed or was refused, with its code. `source` says whose code it
 * is: the host's (`plugin_*`) or one the plugin reported itself. The message is redacted.
 */
export interface PluginCallFailed {
  name: string;
  runtime: PluginRuntime;
  /** The code's digest; absent when the call named none that is valid. */
  digest?: string;
  method: string;
  source: "host" | "plugin";
  code: string;
  message: string;
  field?: string;
}
/**
 * `plugin.calls`: how many calls of a plugin's code succeeded in [from, to) (ADR 0014:
 * successes are counted, failures recorded one by one).
 */
export interface PluginCallsSucceeded { name: string; runtime: PluginRuntime; digest: string; from: string; to: string; succeeded: number }
/** `executable.permitted`: an owner permitted an unconfined executable by name and digest. */
export interface ExecutablePermitted { executable: string; digest: string; size: number }

/** Data type of each host event type. */
export interface HostEventData {
  "module.installed": ModuleInstalled;
  "module.uninstalled": ModuleUninstalled;
  "plugin.call": PluginCallFailed;
  "plugin.calls": PluginCallsSucceeded;
  "executable.permitted": ExecutablePermitted;
}

const hexDigest = { type: "string", pattern: "^[0-9a-f]{64}$" } as const;
const runtime = { enum: ["wasm", "unconfined"] } as const;
const count = { type: "integer", minimum: 0 } as const;
const time = { type: "string", pattern: "^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d+)?Z$" } as const;
const short = (max: number) => ({ type: "string", minLength: 1, maxLength: max }) as const;

export function defineHostEvents(r: EventRegistry): void {
  const define = definer<HostEventData>(r);
  const system = inStream("system");
  define({ type: "module.installed", version: 1, stream: system, fields: { digest: req(hexDigest), size: req(count) } });
  define({ type: "module.uninstalled", version: 1, stream: system, fields: { digest: req(hexDigest) } });
  define({
    type: "plugin.call", version: 1, stream: inNamedStream("plugin", "name"),
    fields: {
      name: req(name), runtime: req(runtime), digest: opt(hexDigest), method: req(short(128)),
      source: req({ enum: ["host", "plugin"] }), code: req({ type: "string", pattern: "^[a-z][a-z_]{0,63}$" }),
      message: req({ type: "string", maxLength: 1000 }), field: opt(short(200)),
    },
  });
  define({
    type: "plugin.calls", version: 1, stream: inNamedStream("plugin", "name"),
    fields: { name: req(name), runtime: req(runtime), digest: req(hexDigest), from: req(time), to: req(time), succeeded: req({ type: "integer", minimum: 1 }) },
  });
  define({
    type: "executable.permitted", version: 1, stream: system,
    fields: { executable: req({ ...short(128), pattern: "^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$" }), digest: req(hexDigest), size: req(count) },
  });
}
