/**
 * The event log's port: what the rest of the control plane may ask of the log, whatever holds it.
 *
 * Asynchronous because PostgreSQL is; the SQLite adapter answers from better-sqlite3's synchronous
 * statements underneath (a resolved promise per call, never extra work per event). Nothing here
 * names SQL, a database handle or a query builder: every read the projections, the lookups, the
 * console and the host need is a method, and each adapter answers it with its own indexes. Tables
 * that are not events (projections' rows, module bytes) have ports of their own beside it.
 */
import type { EventOf, EventTypeName, KnownEvent } from "./catalog.js";
import type { RawEventRow } from "./chain.js";
import type { EventRegistry } from "./registry.js";
import type { LogTables, StoredCheckpoint } from "./tables.js";
import type { BundleId, Hash, HashReader, Result, TileId } from "../tlog/index.js";
import type { ChainPoint, GuardsResult, NewEvent, ReadFilter, VerifyResult } from "./types.js";

/** Options of {@link EventLog.append} and {@link EventLog.observe}. */
export interface AppendOptions {
  /** For each stream, the version the caller read (0 for a new stream); else `conflict`. */
  readonly expected?: Readonly<Record<string, number>>;
  /**
   * On disk before the promise resolves (what an owner is told was done survives a power loss).
   * SQLite: `synchronous=FULL` for this commit (docs/adr/0096); PostgreSQL: every commit is.
   */
  readonly durable?: boolean;
}

/** Notified after each committed append this process learns of, with the events appended. Must not throw. */
export type EventListener = (events: readonly KnownEvent[]) => void;

/** What {@link EventLog.pages} walks: seqs in (afterSeq, toSeq], of these types, in seq order. */
export interface PageFilter {
  readonly afterSeq?: number;
  /** Defaults to the head when the walk starts. */
  readonly toSeq?: number;
  readonly types?: readonly string[];
  /** Events per page (one query each). */
  readonly pageSize?: number;
  /** Folds never read the hashes: without them (`prevHash`/`hash` are "") a page reads faster. */
  readonly hashes?: boolean;
}

/** What {@link EventLog.rawPages} walks: seqs in (afterSeq, toSeq], in seq order. */
export interface RawPageFilter {
  readonly afterSeq?: number;
  /** Defaults to the head when the walk starts. */
  readonly toSeq?: number;
  /** Rows per page (one query each). */
  readonly pageSize?: number;
}

export type { RawEventRow } from "./chain.js";

/** Which egress decisions a page of the egress log looks at, and what a candidate must be. */
export interface EgressCandidateQuery {
  readonly plugin?: string;
  /** Look only after this seq, at no more than `scan` decisions. */
  readonly afterSeq: number;
  readonly scan: number;
  readonly allowed?: boolean;
  /** Lower case; candidates are every decision whose host could lower-case to it (a superset: the caller compares). */
  readonly host?: string;
  /** At most this many candidates, the first in seq order (all within the scan when omitted). */
  readonly limit?: number;
}

/** The candidates among the next `scan` decisions after `afterSeq`, and the seq of the last looked at when there were `scan` (else null). */
export interface EgressCandidates {
  readonly candidates: readonly EventOf<"egress.decision">[];
  readonly bound: number | null;
}

/**
 * Single-event and bounded lookups whose cost does not grow with the log (each adapter keeps an
 * index for it). What `why`, the reconciler, the views' gateway and the console ask per request.
 */
export interface EventLookups {
  /** The latest event of any of `types` in `stream` with seq < `beforeSeq`. */
  lastOf<T extends EventTypeName>(stream: string, types: readonly T[], beforeSeq: number): Promise<EventOf<T> | null>;
  /** The first event of `type` in `stream` with seq > `afterSeq`. */
  firstAfter<T extends EventTypeName>(stream: string, type: T, afterSeq: number): Promise<EventOf<T> | null>;
  /** The newest `limit` events of `types` in `stream`, newest first. */
  newest<T extends EventTypeName>(stream: string, types: readonly T[], limit: number): Promise<EventOf<T>[]>;
  /** The latest config verdict of a plugin's stream for an image, seq < `beforeSeq`. */
  configVerdict(stream: string, image: string, beforeSeq: number): Promise<EventOf<"config.verdict"> | null>;
  /**
   * The latest signature verdict for `digest` checked against exactly `manifest` (null: against
   * no manifest), seq < `beforeSeq` (the whole log when omitted).
   */
  signatureVerdict(digest: string, manifest: string | null, beforeSeq?: number): Promise<EventOf<"signature.verdict"> | null>;
  /** The seq of the latest event with time ≤ `time` (0 when none). */
  seqAt(time: Date): Promise<number>;
  /** Each stream starting with `prefix` and the seq of its latest event, by stream name. */
  streamHeads(prefix: string): Promise<{ readonly stream: string; readonly seq: number }[]>;
  /** Egress decisions for a page of the egress log (see {@link EgressCandidateQuery}). */
  egressCandidates(q: EgressCandidateQuery): Promise<EgressCandidates>;
  /** A plugin's latest `limit` egress decisions with seq ≤ `maxSeq` made in [from, to) (ISO times), newest first. */
  latestEgressDecisions(plugin: string, maxSeq: number, window: { readonly from: string; readonly to: string }, limit: number): Promise<EventOf<"egress.decision">[]>;
}

/**
 * The Merkle tree over the log (RFC 9162; docs/adr/0141): leaf `seq - 1` is SHA-256(0x00 ‖ the
 * bytes the hash chain covers for event `seq`), kept as C2SP tlog-tiles (height 8) beside the log
 * and extended in batches from the log itself, never recomputed. What proofs, the `/tlog` routes,
 * `export-tiles` and the console read; the same on every store.
 */
export interface LogTree {
  /** The leaves the stored tiles cover (≤ the head: the tree may lag the log until {@link catchUp}). */
  size(): Promise<number>;
  /**
   * Extends the stored tree to the head (or to `toSeq`), reading the new events in pages and
   * writing each batch's tiles with the new size in one transaction; resumes from what another
   * process or an earlier run stored. Returns the size reached. Refuses (`tampered`) rows that do
   * not link to the row before.
   */
  catchUp(toSeq?: number): Promise<number>;
  /** The root at `size` (default: the stored size), which must be at most the stored size. */
  root(size?: number): Promise<Hash>;
  /**
   * Reads stored node hashes for `proveInclusion`, `proveConsistency` and `rootAt` of `src/tlog`,
   * for any tree size up to {@link size}; a node past it is a failed read.
   */
  readonly hashes: HashReader;
  /** A tile's bytes at `tile.width` hashes (a prefix of what is stored), or null when the stored tree has not that many. */
  tile(tile: TileId): Promise<Uint8Array | null>;
  /**
   * The entry bundle of `bundle.width` events from seq `256 · bundle.index + 1`: each event's
   * chain bytes, length-prefixed; null when the log has not that many events; a failure
   * (`entry_too_large`) when one of them is over 65,535 bytes, which a bundle cannot hold.
   */
  entries(bundle: BundleId): Promise<Result<Uint8Array> | null>;
  /** The bytes of the leaf of event `seq` (what its leaf hash covers), or null when there is none. */
  entry(seq: number): Promise<Uint8Array | null>;
  /** The signed checkpoint of the largest size, or null before the first. */
  latestCheckpoint(): Promise<StoredCheckpoint | null>;
  /** The signed checkpoint of exactly `size`, or null. */
  checkpointAt(size: number): Promise<StoredCheckpoint | null>;
}

/** The append-only, hash-chained log. */
export interface EventLog {
  /** Where the log lives, for messages: a file's path, or a PostgreSQL URL without its password. */
  readonly location: string;
  readonly kind: "sqlite" | "postgres";
  readonly registry: EventRegistry;
  readonly lookups: EventLookups;
  /** The tables beside the log, in its database (projections, egress counts, the decision check, modules). */
  readonly tables: LogTables;
  /** The Merkle tree over the log, its tiles and signed checkpoints. */
  readonly tree: LogTree;

  /** Appends a batch in one transaction; all or nothing. Seqs have no gaps and readers never see one appear late. */
  append(batch: readonly NewEvent[], opts?: AppendOptions): Promise<KnownEvent[]>;
  /** Appends `event` unless the latest event of its observation group in its stream is the same type with equal canonical data. */
  observe(event: NewEvent, opts?: Pick<AppendOptions, "durable">): Promise<KnownEvent | null>;
  /**
   * Runs `fn` with every commit it makes durable (as `{ durable: true }`), for a use case that
   * appends more than once for one owner's write. A durable commit makes every commit before it durable too.
   */
  durably<T>(fn: () => Promise<T>): Promise<T>;

  /** Events of one type matching `filter`, in seq order, data upcast to the current shape. */
  read<T extends EventTypeName>(filter: ReadFilter & { readonly type: T }): Promise<EventOf<T>[]>;
  /** Events of these types matching `filter`, in seq order. */
  read<T extends EventTypeName>(filter: ReadFilter & { readonly type: readonly T[] }): Promise<EventOf<T>[]>;
  /** Events matching `filter`, in seq order, data upcast to the current shape. */
  read(filter?: ReadFilter): Promise<KnownEvent[]>;
  /** Walks events in pages (one query per page): what folds and rebuilds read. */
  pages(filter: PageFilter): AsyncIterable<readonly KnownEvent[]>;
  /** The latest event of a stream of type `type`, or null. */
  last<T extends EventTypeName>(stream: string, type: T): Promise<EventOf<T> | null>;
  /** The latest event of a stream, or null. */
  last(stream: string): Promise<KnownEvent | null>;
  /** The event with this seq, or null. */
  get(seq: number): Promise<KnownEvent | null>;
  /** The current version of a stream (0 when empty). */
  version(stream: string): Promise<number>;
  /** The versions of a stream whose events have seqs in (afterSeq, toSeq] (`from > to` when none). */
  versionsBetween(stream: string, afterSeq?: number, toSeq?: number): Promise<{ readonly from: number; readonly to: number }>;
  /** The seq of the latest event (0 when empty). */
  head(): Promise<number>;
  /** The chain's head (seq and hash); seq 0 and the genesis hash when empty. */
  headPoint(): Promise<ChainPoint>;

  /** Walks the chain; names the first row whose hash does not hold. From a verified point, walks only the rows after it. */
  verify(from?: ChainPoint): Promise<VerifyResult>;
  /** Walks from the last verified point to the head and moves the point there when the chain holds. */
  verifySinceCheckpoint(): Promise<VerifyResult>;
  /** The last point a walk verified, or null when none did. */
  verifiedPoint(): Promise<ChainPoint | null>;
  /** Whether the guards that refuse UPDATE, DELETE (and on PostgreSQL TRUNCATE) on events are in place. */
  checkGuards(): Promise<GuardsResult>;
  /** Re-creates missing guards (after `verify` found the chain intact); returns the ones restored. */
  restoreGuards(): Promise<string[]>;

  /**
   * The stored rows exactly as kept (each event's data as the canonical text hashed, not upcast),
   * in seq order, in pages: what copying a log to another store reads.
   */
  rawPages(filter?: RawPageFilter): AsyncIterable<readonly RawEventRow[]>;
  /**
   * Writes rows read by another log's {@link rawPages} exactly as they were kept, in one
   * transaction, checking each as it goes: the first must follow this log's head (seq 1 after the
   * genesis hash when the log is empty; `not_empty` when it follows nothing here), each the next
   * seq linked to the one before, each holding its own hash (`tampered` names the first that does
   * not). Nothing of a refused call is written. Returns the new head.
   */
  importRaw(rows: readonly RawEventRow[]): Promise<ChainPoint>;

  /**
   * Registers a listener for events committed from now on, by this process or (PostgreSQL:
   * LISTEN/NOTIFY; SQLite: {@link announce}) another; returns the function that removes it.
   */
  subscribe(fn: EventListener): () => void;
  /** Tells this process's listeners of events another connection committed, as if this log had appended them. */
  announce(events: readonly KnownEvent[]): void;
  close(): Promise<void>;
}
