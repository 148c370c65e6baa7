/**
 * Errors as values. Every refusal the witness makes before it serves (a bad `--log` line, a logs
 * file, a name, a data folder, a state file it cannot trust) is a {@link WitnessError}: a stable
 * code, the path of what it concerns (`--log[1]`, `logs:3`, `state/<hash>.json`) and one line to
 * print. No message quotes the witness's key file or any signer key: they are secrets.
 */

/** Stable codes. Never rename one: they are part of the interface. */
export const WitnessErrorCode = {
  /** A `--log` value or a line of the logs file that is not `<origin> <verifier key>`. */
  BadLog: "bad_log",
  /** A logs file that cannot be read, or is over its cap. */
  BadLogsFile: "bad_logs_file",
  /** No log to witness. */
  NoLogs: "no_logs",
  /** A witness name that is not a key name. */
  BadName: "bad_name",
  /** A `--name` other than the one the data folder's key was made with. */
  NameMismatch: "name_mismatch",
  /** A data folder that cannot be made, read or written. */
  BadDataFolder: "bad_data_folder",
  /** Another witness process holds the data folder. */
  FolderInUse: "folder_in_use",
  /** A key file that is not a witness key, or that others may read. */
  BadKeyFile: "bad_key_file",
  /** A state file that does not parse or does not agree with itself: never silently reset. */
  CorruptState: "corrupt_state",
} as const;
export type WitnessErrorCode = (typeof WitnessErrorCode)[keyof typeof WitnessErrorCode];

export interface WitnessError {
  readonly code: WitnessErrorCode;
  /** What it concerns: a flag, `<file>:<line>`, a file of the data folder. */
  readonly path: string;
  readonly message: string;
}

export type Result<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: WitnessError };

export const ok = <T>(value: T): Result<T> => ({ ok: true, value });
export const fail = <T = never>(code: WitnessErrorCode, path: string, message: string): Result<T> => ({ ok: false, error: { code, path, message } });

/** Thrown only across the async edges of opening a witness; carries the value. */
export class WitnessRefusal extends Error {
  constructor(readonly error: WitnessError) {
    super(error.message);
    this.name = "WitnessRefusal";
  }
}
