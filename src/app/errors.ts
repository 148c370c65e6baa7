/**
 * The one error type of the use cases, with a registry of codes (Fastify's `lib/errors.js` habit):
 * each code has the CLI's exit code and the HTTP API's status, pinned by a test, so the two faces
 * refuse the same input the same way. Messages are one line and never hold a secret or a token.
 *
 * Exit codes follow one rule: 2 when the command was used wrongly (a bad flag, argument or input
 * file: change the command), 1 when it ran and the answer is a refusal or a failed check.
 */
import { StoreError } from "../events/index.js";
import type { StoreErrorCode } from "../events/index.js";

/** Every code a use case refuses with, and how each face reports it. */
export const APP_ERRORS = {
  /** A bad flag, argument, query parameter or header. */
  usage: { exit: 2, status: 400 },
  /** A document (Plugin, PluginGrant, file) that does not parse or validate; `field` names where. */
  invalid_resource: { exit: 2, status: 422 },
  /** An input over its size or count cap, refused before it was parsed. */
  too_large: { exit: 2, status: 413 },
  /** The thing asked about does not exist (a plugin, a grant, a data folder's log). */
  not_found: { exit: 1, status: 404 },
  /** The write expected a stream version another writer moved on (HTTP `If-Match`). */
  precondition_failed: { exit: 1, status: 412 },
  /** A write that must name the version it saw did not (HTTP: no `If-Match`). */
  precondition_required: { exit: 1, status: 428 },
  /** The state does not allow it (a data folder locked by another `up`, a writer that kept changing the plugin). */
  conflict: { exit: 1, status: 409 },
  /** An approval for a version whose spec (its manifest among it) is invalid: it cannot run whatever is approved. */
  spec_invalid: { exit: 1, status: 409 },
  /** An approval for a version whose signature the trust policy refused: it cannot run whatever is approved. */
  signature_refused: { exit: 1, status: 409 },
  /** An approval for a version whose config its own schema refuses: it cannot run whatever is approved. */
  config_refused: { exit: 1, status: 409 },
  /** An uninstall with `--purge` of a plugin whose module another installed plugin still runs (docs/adr/0162). */
  plugin_pinned: { exit: 1, status: 409 },
  /** The log's hash chain or its guards do not hold: nothing acts on it. */
  log_broken: { exit: 1, status: 503 },
  /** No session, or an expired or invalid one. */
  unauthorized: { exit: 1, status: 401 },
  /** The session's role may not do this. */
  forbidden: { exit: 1, status: 403 },
  /** A request body in a media type the route does not read (HTTP only: a form where YAML or JSON was expected). */
  unsupported_media_type: { exit: 2, status: 415 },
  /** The control plane cannot answer now: a request's deadline passed, or too many streams are open. Try again. */
  unavailable: { exit: 1, status: 503 },
  /** A setting the control plane cannot start with (a bad catalog, signers file, trust root). */
  bad_setting: { exit: 1, status: 500 },
  /** Anything else; the message says what failed, never with a secret in it. */
  internal: { exit: 1, status: 500 },
} as const satisfies Record<string, { readonly exit: 1 | 2; readonly status: number }>;

/** A code of {@link APP_ERRORS}. */
export type AppErrorCode = keyof typeof APP_ERRORS;

/** A use case's refusal: a stable code, a one-line message, and the field it is about when there is one. */
export class AppError extends Error {
  readonly code: AppErrorCode;
  readonly field: string | undefined;

  constructor(code: AppErrorCode, message: string, field?: string) {
    super(message.split("\n")[0] ?? message);
    this.name = "AppError";
    this.code = code;
    this.field = field;
  }

  /** The CLI's exit code for this error. */
  get exitCode(): 1 | 2 {
    return APP_ERRORS[this.code].exit;
  }

  /** The HTTP API's status for this error. */
  get status(): number {
    return APP_ERRORS[this.code].status;
  }

  /** The HTTP API's body: `{code, message, field?}`. */
  toJSON(): { code: AppErrorCode; message: string; field?: string } {
    return { code: this.code, message: this.message, ...(this.field === undefined ? {} : { field: this.field }) };
  }
}

/** Any thrown value as an {@link AppError} (unknown failures are `internal`, their message kept to one line). */
export function toAppError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  if (err instanceof StoreError) return new AppError(STORE_CODES[err.code] ?? "internal", err.message);
  return new AppError("internal", err instanceof Error ? err.message : String(err));
}

/** What the log's refusals are to a face: a log that cannot answer now is `unavailable`, one that does not hold is `log_broken`. */
const STORE_CODES: Partial<Record<StoreErrorCode, AppErrorCode>> = {
  busy: "unavailable",
  timeout: "unavailable",
  unavailable: "unavailable",
  outcome_unknown: "unavailable",
  closed: "unavailable",
  forbidden: "forbidden",
  tampered: "log_broken",
  conflict: "precondition_failed",
  not_empty: "conflict",
  migration: "bad_setting",
};
