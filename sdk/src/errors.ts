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
  | "core_wrong_origin";

/** The SDK's one error class: a stable code plus a message that never contains a secret. */
export class SdkError extends Error {
  readonly code: SdkErrorCode;

  constructor(code: SdkErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "SdkError";
    this.code = code;
  }
}
