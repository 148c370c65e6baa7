// Errors are values here: AssemblyScript has no exceptions (a `throw` aborts the whole call), so
// every fallible SDK function returns a Result, and a handler returns one to the dispatcher.

/** The failure codes a plugin reports itself (docs/abi.md); never the host's plugin_* codes. */
export namespace Code {
  /** The call's request or params are not what the method takes. */
  export const INVALID_REQUEST = "invalid_request";
  /** The plugin registered no handler for the method. */
  export const UNKNOWN_METHOD = "unknown_method";
  /** A bug in the plugin: something it should always be able to do failed. */
  export const INTERNAL = "internal";
  /** The host refused an HTTP request to an origin the owner has not approved. */
  export const ORIGIN_NOT_APPROVED = "origin_not_approved";
  /** An HTTP request failed, or its answer could not be used. */
  export const HTTP_FAILED = "http_failed";
}

/** Why a call, or a step of one, failed: a stable code and a message without secrets. */
export class CallError {
  constructor(public code: string, public message: string) {}
}

/** A value or a CallError, never both. */
export class Result<T> {
  private constructor(private _value: T | null, private _error: CallError | null) {}

  /** A success holding `value`. */
  static ok<T>(value: T): Result<T> {
    return new Result<T>(value, null);
  }

  /** A failure with `code` and `message`. */
  static err<T>(code: string, message: string): Result<T> {
    return new Result<T>(null, new CallError(code, message));
  }

  /** A failure carrying `error` (to pass one on under another value type). */
  static fail<T>(error: CallError): Result<T> {
    return new Result<T>(null, error);
  }

  get ok(): bool {
    return this._error === null;
  }

  /** The value; aborts on a failure, so check `ok` first. */
  get value(): T {
    const v = this._value;
    if (v === null) abort("Result.value of a failure");
    return v!;
  }

  /** The error; aborts on a success, so check `ok` first. */
  get error(): CallError {
    const e = this._error;
    if (e === null) abort("Result.error of a success");
    return e!;
  }
}
