/**
 * Ports for the tables that live beside the event log but are not events: the projections' rows
 * and checkpoints, the egress decisions counted by unit of time, the incremental decision check,
 * and module bytes. Each adapter of the log keeps them in the same database as its events (one
 * transaction can hold a row and the event that records it), and answers them with its own SQL;
 * nothing here names a dialect. Every write that moves a checkpoint does so in the transaction
 * that writes the rows, so a table always matches its checkpoint.
 */
import type { KnownEvent } from "./catalog.js";
import type { NewEvent } from "./types.js";

/** A value of one column of a projection's row. */
export type Cell = string | number | null;

/** What a projection's table holds: rows of cells by key, and a checkpoint. */
export interface ProjectionTableSpec {
  /** The checkpoint's name (unique among projections). */
  readonly name: string;
  /** The table is emptied and its checkpoint set to 0 when the stored version differs. */
  readonly version: number;
  /** The table's name: lower-case letters, digits and `_`, starting with a letter. */
  readonly table: string;
  /** The columns after `key`, each text or a whole number. */
  readonly columns: readonly { readonly name: string; readonly type: "TEXT" | "INTEGER" }[];
}

/** The rows of one table a fold changed: upserted by key, or deleted. */
export interface ProjectionChanges {
  readonly spec: ProjectionTableSpec;
  readonly upserts: readonly (readonly [key: string, cells: readonly Cell[]])[];
  readonly deletes: readonly string[];
}

/** Projections' tables and their checkpoints. */
export interface ProjectionTables {
  /**
   * Makes each table exist; one whose stored version differs from its spec's (or that has no
   * checkpoint) is emptied and its checkpoint set to 0 at the spec's version.
   */
  open(specs: readonly ProjectionTableSpec[]): Promise<void>;
  /** The seq each named projection reflects (0 when it has no checkpoint). */
  checkpoints(names: readonly string[]): Promise<Map<string, number>>;
  /** Every row of a table, in key order. */
  rows(spec: ProjectionTableSpec): Promise<(readonly [key: string, cells: Cell[]])[]>;
  /** Empties the tables and sets their checkpoints to 0, in one transaction. */
  reset(specs: readonly ProjectionTableSpec[]): Promise<void>;
  /** Writes the changes and moves the checkpoint of every table in `changes` to `seq`, in one transaction. */
  commit(changes: readonly ProjectionChanges[], seq: number): Promise<void>;
}

/** The decisions of a plugin about one destination within one unit of time. */
export interface EgressCountRow {
  /** Index into the units counted (a second, a minute, an hour, a day). */
  readonly level: number;
  /** Where the unit starts (ms since the epoch, a multiple of the unit). */
  readonly start: number;
  readonly plugin: string;
  /** Lower case: one destination, however its decisions wrote it. */
  readonly host: string;
  readonly port: number;
  readonly allowed: number;
  /** Refused by policy. */
  readonly refused: number;
  /** Failed to reach (the decision's reason is one of `EGRESS_FAILURE_CODES`): nothing was refused by policy. */
  readonly failed: number;
  readonly lastSeq: number;
}

/** What counting needs of one egress decision, read without parsing the rest of it. */
export interface EgressDecisionFacts {
  readonly seq: number;
  readonly time: string;
  readonly plugin: string;
  /** As the decision wrote it (not lower-cased). */
  readonly host: string;
  readonly port: number;
  readonly allowed: boolean;
  /** The decision's reason code (what tells a refusal by policy from a failure to reach). */
  readonly reason: string;
}

/** The egress counts table and its checkpoint. */
export interface EgressCountTable {
  /** Makes the table exist; empties it and sets its checkpoint to 0 when its stored version differs from `version`. */
  open(version: number): Promise<void>;
  /** The seq the counts reflect. */
  checkpoint(): Promise<number>;
  /** The egress decisions with seqs in (afterSeq, toSeq], in seq order. */
  decisions(afterSeq: number, toSeq: number): Promise<EgressDecisionFacts[]>;
  /**
   * Adds `rows` to the counts (allowed, refused and failed summed, the latest seq kept) and moves the
   * checkpoint from `from` to `to`, in one transaction; adds nothing and returns false when the
   * checkpoint is no longer `from` (another process counted those seqs meanwhile).
   */
  add(from: number, to: number, rows: readonly EgressCountRow[]): Promise<boolean>;
  /** Empties the table and sets the checkpoint to 0. */
  reset(): Promise<void>;
  /** The rows of `level` starting in [from, to) (ms), of one plugin when named. */
  rows(level: number, from: number, to: number, plugin?: string): Promise<EgressCountRow[]>;
}

/** What the incremental decision check found up to its checkpoint (JSON the check reads back). */
export interface DecisionCheckTotals {
  readonly checked: number;
  readonly diverged: number;
  readonly more: number;
  readonly listsKnown: boolean;
  readonly divergences: readonly unknown[];
}

/** The egress re-decider's state of one plugin's allow-list (JSON the check reads back). */
export interface DecisionCheckList {
  readonly current: unknown;
  readonly changed: boolean;
  readonly previous: unknown;
}

/** The decision check's table and its checkpoint. */
export interface DecisionCheckTable {
  /** Makes the tables exist; empties them and sets the checkpoint to 0 when the stored version differs from `version`. */
  open(version: number): Promise<void>;
  /** The seq the check reached. */
  checkpoint(): Promise<number>;
  /** The totals (null before the first step) and every plugin's list state. */
  load(): Promise<{ readonly totals: DecisionCheckTotals | null; readonly lists: Map<string, DecisionCheckList> }>;
  /**
   * Writes the totals and the changed lists and moves the checkpoint from `from` to `to`, in one
   * transaction; writes nothing and returns false when the checkpoint is no longer `from`.
   */
  save(from: number, to: number, totals: DecisionCheckTotals, lists: ReadonlyMap<string, DecisionCheckList>): Promise<boolean>;
  /** Forgets what was found and sets the checkpoint to 0. */
  reset(): Promise<void>;
}

/** One stored module, without its bytes. */
export interface StoredModule {
  readonly digest: string;
  readonly size: number;
  readonly installedAt: string;
  /** The manifest JSON the module reported at install. */
  readonly manifest: string;
}

/** Module bytes by digest; an install's row and its event commit in one transaction. */
export interface ModuleTable {
  get(digest: string): Promise<StoredModule | undefined>;
  bytes(digest: string): Promise<Uint8Array | undefined>;
  /** Every module, by install time then digest. */
  list(): Promise<StoredModule[]>;
  /**
   * Stores the module and appends `event`, in one transaction; does neither and returns null when
   * a module with this digest is stored already.
   */
  install(module: StoredModule & { readonly bytes: Uint8Array }, event: NewEvent): Promise<KnownEvent | null>;
  /** Deletes the module and appends `event`, in one transaction; does neither and returns null when none is stored. */
  uninstall(digest: string, event: NewEvent): Promise<KnownEvent | null>;
}

/** A tile of the Merkle tree over the log as stored: its hashes at its current width (1 to 256). */
export interface StoredTile {
  readonly level: number;
  readonly index: number;
  readonly width: number;
  /** `width` hashes of 32 bytes, concatenated (the tile's bytes as C2SP tlog-tiles serves them). */
  readonly hashes: Uint8Array;
}

/** A signed checkpoint of the tree as stored. */
export interface StoredCheckpoint {
  /** Events covered: seqs 1 to `size`. */
  readonly size: number;
  /** The root hash at `size`, base64. */
  readonly root: string;
  /** The signed note (C2SP tlog-checkpoint in a signed-note envelope), as served. */
  readonly note: string;
  /** The seq of the `log.checkpoint` event that recorded it. */
  readonly seq: number;
}

/**
 * The Merkle tree's tiles, the size they cover, and the signed checkpoints (docs/adr/0141).
 * Tiles only grow (a partial tile is replaced by a wider one, never by other hashes) and the size
 * moves by compare-and-set, so two processes extending the tree of one log write the same bytes;
 * a checkpoint is stored once per size and never changed.
 */
export interface TreeTable {
  /** The number of leaves the stored tiles cover (0 when none). */
  size(): Promise<number>;
  /** The stored tiles among `ids` (a tile not stored is left out), at their stored width. */
  tiles(ids: readonly { readonly level: number; readonly index: number }[]): Promise<StoredTile[]>;
  /**
   * Writes `tiles` (each replacing a narrower stored one) and moves the size from `from` to `to`,
   * in one transaction; writes nothing and returns false when the size is no longer `from`.
   */
  advance(from: number, to: number, tiles: readonly StoredTile[]): Promise<boolean>;
  /** The checkpoint of the largest size, or null when none was stored. */
  latestCheckpoint(): Promise<StoredCheckpoint | null>;
  /** The checkpoint of exactly `size`, or null. */
  checkpointAt(size: number): Promise<StoredCheckpoint | null>;
  /**
   * Stores a checkpoint and appends `event` (its `log.checkpoint`), in one transaction; does
   * neither and returns null when a checkpoint of this size is stored already (never two roots
   * for one size). The stored checkpoint's `seq` is the event's.
   */
  addCheckpoint(checkpoint: Omit<StoredCheckpoint, "seq">, event: NewEvent): Promise<KnownEvent | null>;
}

/** A recorded batch as the deliveries table keeps it (docs/adr/0199). */
export interface DeliveryRow {
  readonly batchId: string;
  readonly plugin: string;
  /** `sync` or `import`. */
  readonly kind: string;
  /** `sha256:<hex>` of the delivery's text. */
  readonly digest: string;
  readonly recordedAt: string;
  /** The delivery's counts, as JSON text. */
  readonly counts: string;
}

/**
 * Connectors' deliveries, content-addressed (docs/adr/0199): a batch's row names the digest of
 * its delivery's text, kept once per digest. The first row recorded for a batch stands.
 */
export interface DeliveryTable {
  /**
   * Stores `body` under `row.digest` and the batch's row, in one transaction, unless the batch is
   * recorded already: then nothing is written and the row that stands comes back, `fresh: false`.
   */
  record(row: DeliveryRow, body: string): Promise<{ readonly row: DeliveryRow; readonly fresh: boolean }>;
  /** A batch's row and its delivery's text, or null. */
  get(batchId: string): Promise<{ readonly row: DeliveryRow; readonly body: string } | null>;
  /** The newest `limit` rows (by recording time, then batch), of one plugin when named. */
  list(plugin: string | null, limit: number): Promise<DeliveryRow[]>;
}

/** The tables beside a log, in its database. */
export interface LogTables {
  readonly projections: ProjectionTables;
  readonly egressCounts: EgressCountTable;
  readonly decisionCheck: DecisionCheckTable;
  readonly modules: ModuleTable;
  /** The Merkle tree's tiles and signed checkpoints. */
  readonly tree: TreeTable;
  /** Connectors' deliveries, by batch and by digest. */
  readonly deliveries: DeliveryTable;
}
