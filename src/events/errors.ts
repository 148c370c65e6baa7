/**
 * The store's one error class. `code` is stable (tests and callers switch on it); `message` is one
 * line and never carries event data beyond names, so no secret leaks through an error.
 */

/** Stable codes of {@link StoreError}. Never rename: they are part of the interface. */
export const StoreErrorCode = {
  UnknownType: "unknown_type",
  InvalidData: "invalid_data",
  InvalidStream: "invalid_stream",
  InvalidEvent: "invalid_event",
  InvalidCause: "invalid_cause",
  Conflict: "conflict",
  Tampered: "tampered",
  Closed: "closed",
  Migration: "migration",
  /** The write lock was not had before the caller's deadline; nothing was written. */
  Busy: "busy",
  /** A statement ran past its deadline, or a transaction stayed idle past its own; nothing was written. */
  Timeout: "timeout",
  /** The database could not be reached, or the connection was lost before a commit was asked for; nothing was written. */
  Unavailable: "unavailable",
  /** The connection was lost while a commit was under way: the append may or may not be in the log (read it to know). */
  OutcomeUnknown: "outcome_unknown",
  /** The database refused the role the log connects as (a privilege it does not have, by design or by mistake). */
  Forbidden: "forbidden",
  /** Rows copied from another log do not continue this one (it already holds other events). */
  NotEmpty: "not_empty",
} as const;

export type StoreErrorCode = (typeof StoreErrorCode)[keyof typeof StoreErrorCode];

/** A problem with one field of one event of a batch. */
export interface EventProblem {
  /** Index of the event in the batch. */
  readonly index: number;
  /** JSON path of the field (`data.spec.image`), "" for the whole event. */
  readonly path: string;
  readonly message: string;
}

/** Why the store refused to do something. Nothing of a refused batch is written. */
export class StoreError extends Error {
  override readonly name = "StoreError";
  readonly code: StoreErrorCode;
  readonly problems: readonly EventProblem[];
  /** For `conflict`: the stream, the version the caller expected and the actual one. */
  readonly conflict?: { readonly stream: string; readonly expected: number; readonly actual: number };

  constructor(
    code: StoreErrorCode,
    message: string,
    extra: { problems?: readonly EventProblem[]; conflict?: { stream: string; expected: number; actual: number } } = {},
  ) {
    super(message);
    this.code = code;
    this.problems = extra.problems ?? [];
    if (extra.conflict !== undefined) this.conflict = extra.conflict;
  }
}
