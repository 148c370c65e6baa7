/**
 * The plugin host's public surface (seed 003, issue 13): running plugin code confined, in
 * WebAssembly sandboxes within limits, or unconfined as a permitted subprocess. The app layer
 * builds one host at start, installs modules from verified images, prepares the pinned ones, and
 * calls plugins with their effective origins and egress tokens.
 */

/** Builds the host; its options, calls and results. */
export { createPluginHost, type PluginHost, type PluginHostOptions, type CallRequest, type CallResult, type InstalledModule, type LastCall, type UnconfinedApi } from "./host.js";
/** Error values: the seed's codes (`plugin_*`), the guest's own codes, and the host's config error. */
export { HostErrorCode, HOST_ERROR_CODES, GuestErrorCode, HostConfigError, hostError, isGuestErrorCode, type HostError, type PluginError, type CallError, type HostResult } from "./errors.js";
/** The host's metrics (queue depth, wait and run time, busy refusals, hard stops). */
export { PluginHostMetrics } from "./metrics.js";
/** Limits (seed 003's DefaultLimits) and size caps. */
export { DEFAULT_LIMITS, DEFAULT_CAPS, MAX_MEMORY, resolveLimits, type Limits, type Caps } from "./limits.js";
/** The module checks, the ABI version and seed 003's ValidDigest. */
export { checkModule, validDigest, sha256Hex, ABI_VERSION, type CheckedModule } from "./module-check.js";
/** The HTTP capability's port and its egress-proxy implementation. */
export type { GrantedSecretValues } from "./secret-call.js";
export { proxyHttp, type HttpCapability, type HttpContext, type HttpOutcome, type PluginHttpRequest, type PluginHttpResponse, type ProxyHttpOptions } from "./http.js";
/** Approved origins from effective egress hosts. */
export { originOf, originsOf } from "./origins.js";
/** The unconfined tier's directory listing and name rule. */
export { isExecutableName, type ExecutableFile } from "./unconfined/executables.js";
/** A permitted unconfined executable. */
export type { PermittedExecutable } from "./unconfined/tier.js";
/** A stored module (without its bytes). */
export type { StoredModule } from "../events/index.js";
