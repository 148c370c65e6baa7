/** Why the SDK refused to do something, as a stable code (never carries a token). */
export type SdkErrorCode =
  | "env_invalid"
  | "config_invalid"
  | "file_unreadable"
  | "file_outside_directory"
  | "file_too_large"
  | "token_empty"
  | "egress_no_proxy"
  | "egress_plain_http"
  | "core_wrong_origin"
  | "core_refused";

/** The SDK's one error class: a stable code plus a message that never contains a secret. */
export class SdkError extends Error {
  readonly code: SdkErrorCode;
  /** For `core_refused`: the core's HTTP status and its refusal's code (`capability_not_held`, …). */
  readonly status?: number;
  readonly refusal?: string;

  constructor(code: SdkErrorCode, message: string, options?: { cause?: unknown; status?: number; refusal?: string }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = "SdkError";
    this.code = code;
    if (options?.status !== undefined) this.status = options.status;
    if (options?.refusal !== undefined) this.refusal = options.refusal;
  }
}
