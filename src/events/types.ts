/** Shapes of events as appended and as stored. */

/** An event to append. `causedBy` is the seq of the event that caused it; null for observations. */
export interface NewEvent {
  readonly stream: string;
  readonly type: string;
  readonly data: unknown;
  /** Who: `cluster`, `owner:cli`, `reconciler`, `egress`… Never a token. */
  readonly actor: string;
  readonly causedBy?: number | null;
}

/** An event as stored, with its data read through the upcasters (current shape). */
export interface StoredEvent<D = unknown> {
  /** Global sequence, from 1, without gaps. */
  readonly seq: number;
  readonly stream: string;
  /** Version within the stream, from 1. */
  readonly version: number;
  readonly type: string;
  /** The schema version the row was written with (data is already upcast to the current one). */
  readonly schemaVersion: number;
  /** ISO-8601 UTC, from the store's clock. */
  readonly time: string;
  readonly actor: string;
  readonly causedBy: number | null;
  readonly data: D;
  readonly prevHash: string;
  readonly hash: string;
}

/** What {@link EventLog.read} selects; every field narrows. Results are in seq order. */
export interface ReadFilter {
  readonly stream?: string;
  readonly streamPrefix?: string;
  readonly type?: string | readonly string[];
  /** Only events with seq > afterSeq. */
  readonly afterSeq?: number;
  /** Only events with seq ≤ toSeq. */
  readonly toSeq?: number;
  /** Only events with time ≥ since. */
  readonly since?: Date;
  /** Only events with time ≤ until. */
  readonly until?: Date;
  readonly limit?: number;
}

/** Where an incremental walk of the chain starts: a row already verified, and its hash. */
export interface ChainPoint {
  readonly seq: number;
  readonly hash: string;
}

/** Whether the schema's guards (the triggers refusing UPDATE and DELETE) are in place. */
export interface GuardsResult {
  readonly ok: boolean;
  /** The guards that are missing or not as the migration made them. */
  readonly missing: readonly string[];
}

/** Result of walking the hash chain. */
export type VerifyResult =
  | { readonly ok: true; readonly count: number }
  | { readonly ok: false; readonly seq: number; readonly reason: string };
