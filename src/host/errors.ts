/**
 * Errors of the plugin host as values (seed 003, "Constants"). A {@link HostError} is why the host
 * refused a module or a call failed; a {@link PluginError} is a failure the plugin reported itself,
 * with one of the ABI's own codes. The two never share a code: the host's all start `plugin_`.
 * Messages never carry a Secret handed to the call or an egress token.
 */

/** The seed's constant list, exact, and `plugin_busy` (ADR 0106). Where each is used is in `docs/adr/0015-host-error-codes.md`. */
export const HostErrorCode = {
  /** The module is not WebAssembly, is not a plugin, or imports something the host does not provide. */
  ModuleInvalid: "plugin_module_invalid",
  /** The module was built for another ABI version. */
  AbiUnsupported: "plugin_abi_unsupported",
  /** The module reported no valid manifest (or not the signed label's). */
  ManifestInvalid: "plugin_manifest_invalid",
  /** The manifest declares a capability the WebAssembly host cannot serve (OLP: a dialect). */
  DialectUnknown: "plugin_dialect_unknown",
  /** A call exceeded its time limit. */
  TimedOut: "plugin_timed_out",
  /** A call trapped, overflowed its stack, exited or exhausted its memory. */
  Failed: "plugin_failed",
  /** No plugin code with the digest is installed (or permitted). */
  NotInstalled: "plugin_not_installed",
  /** The plugin has no approved version: its PluginGrant does not let it run. */
  NotApproved: "plugin_not_approved",
  /** OLP: the plugin declares no profile with the ID. OpenFief has no profile IDs: unused (ADR 0015). */
  ProfileUnknown: "plugin_profile_unknown",
  /** A plugin that pins the module still runs it, so it stays installed. */
  Pinned: "plugin_pinned",
  /** The code is an unconfined executable and the deployment does not enable the tier. */
  UnconfinedDisabled: "plugin_unconfined_disabled",
  /** The unconfined directory holds no executable with the name. */
  ExecutableUnknown: "plugin_executable_unknown",
  /** The executable could not be started or does not speak the ABI over stdio. */
  ExecutableInvalid: "plugin_executable_invalid",
  /** The executable no longer has the digest it was permitted with. */
  ExecutableChanged: "plugin_executable_changed",
  /**
   * Not in the seed (ADR 0106): every instance of the module is busy and its queue of waiting calls
   * is full; nothing ran, so the caller may try again.
   */
  Busy: "plugin_busy",
} as const;

export type HostErrorCode = (typeof HostErrorCode)[keyof typeof HostErrorCode];

/** Every host code, for tables and tests. */
export const HOST_ERROR_CODES: readonly HostErrorCode[] = Object.values(HostErrorCode);

/** The codes a plugin reports its own failures with (docs/abi.md). */
export const GuestErrorCode = {
  InvalidRequest: "invalid_request",
  UnknownMethod: "unknown_method",
  Internal: "internal",
  OriginNotApproved: "origin_not_approved",
  HttpFailed: "http_failed",
} as const;

export type GuestErrorCode = (typeof GuestErrorCode)[keyof typeof GuestErrorCode];

const GUEST_CODES: ReadonlySet<string> = new Set(Object.values(GuestErrorCode));

/** True for one of the ABI's guest codes. */
export function isGuestErrorCode(code: unknown): code is GuestErrorCode {
  return typeof code === "string" && GUEST_CODES.has(code);
}

/** Why the host refused a module or a call. `field` locates the offending part when there is one. */
export interface HostError {
  readonly source: "host";
  readonly code: HostErrorCode;
  readonly field?: string;
  readonly message: string;
}

/** A failure the plugin reported itself (`{"error": {code, message}}`). */
export interface PluginError {
  readonly source: "plugin";
  readonly code: GuestErrorCode;
  readonly message: string;
}

/** Either kind of call failure; `source` tells which. */
export type CallError = HostError | PluginError;

/** Builds a {@link HostError}. */
export function hostError(code: HostErrorCode, message: string, field?: string): HostError {
  return field === undefined ? { source: "host", code, message } : { source: "host", code, field, message };
}

/** A value or every reason there is none. */
export type HostResult<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: HostError };

/** Thrown by {@link createPluginHost} when its options would weaken it; lists every problem. */
export class HostConfigError extends Error {
  constructor(readonly problems: readonly { readonly field: string; readonly message: string }[]) {
    super(`invalid plugin host options: ${problems.map((p) => `${p.field}: ${p.message}`).join("; ")}`);
    this.name = "HostConfigError";
  }
}
