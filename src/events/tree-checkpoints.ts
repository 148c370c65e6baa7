/**
 * Signed checkpoints of the tree over the log (docs/adr/0141): the tree caught up to the head, its
 * root signed as a C2SP tlog-checkpoint in a signed-note envelope with the log's key (whose name
 * is the checkpoint's origin), stored once per size with the `log.checkpoint` event that records
 * it, in one transaction. And the schedule that writes one every N events and every T seconds.
 */
import { formatHash, signCheckpoint } from "../tlog/index.js";
import type { NoteSigner } from "../tlog/index.js";
import { LOG_STREAM } from "./catalog/log-events.js";
import { StoreError, StoreErrorCode } from "./errors.js";
import type { EventLog } from "./port.js";
import type { StoredCheckpoint } from "./tables.js";

/** Who appends `log.checkpoint` events. */
export const CHECKPOINT_ACTOR = "log";

/**
 * Writes a checkpoint of the whole log as it is now, unless there is nothing new to cover: returns
 * the newest checkpoint then (null when the log is empty). "Nothing new" is also a log whose only
 * event after the newest checkpoint is that checkpoint's own record, so a quiet log stays quiet.
 * Of two processes signing the same size with the same key, one stores it and both return it.
 */
export async function writeCheckpoint(log: EventLog, signer: NoteSigner): Promise<StoredCheckpoint | null> {
  const size = await log.tree.catchUp();
  const latest = await log.tree.latestCheckpoint();
  if (size === 0) return latest;
  // The tree that grew from the stored tiles must still give the newest signed root: never sign a different tree.
  if (latest !== null && latest.size <= size && formatHash(await log.tree.root(latest.size)) !== latest.root) {
    throw new StoreError(StoreErrorCode.Tampered, `the tree's root at ${latest.size} is not the one signed in its checkpoint: the tiles or the log were changed; nothing is signed`);
  }
  if (latest !== null && (size <= latest.size || (size === latest.seq && latest.seq === latest.size + 1))) return latest;
  const root = await log.tree.root(size);
  const note = signCheckpoint({ origin: signer.name, size, root, extensions: [] }, [signer]);
  if (!note.ok) throw new StoreError(StoreErrorCode.InvalidEvent, `cannot sign a checkpoint: ${note.error.message}`);
  const checkpoint = { size, root: formatHash(root), note: note.value };
  const event = await log.tables.tree.addCheckpoint(checkpoint, {
    stream: LOG_STREAM, type: "log.checkpoint", actor: CHECKPOINT_ACTOR,
    data: { origin: signer.name, size, root: checkpoint.root, note: checkpoint.note },
  });
  if (event !== null) return { ...checkpoint, seq: event.seq };
  const stored = await log.tree.checkpointAt(size);
  if (stored === null) throw new StoreError(StoreErrorCode.Conflict, `a checkpoint of size ${size} was refused and none is stored`);
  if (stored.root !== checkpoint.root) throw new StoreError(StoreErrorCode.Tampered, `the stored checkpoint of size ${size} has another root than the tree's`);
  return stored;
}

/** When checkpoints are written. */
export interface CheckpointScheduleOptions {
  /** Every this many events appended by this process (default {@link DEFAULT_CHECKPOINT_EVERY}). */
  readonly every?: number;
  /** And every this many ms while the log has new events (default {@link DEFAULT_CHECKPOINT_INTERVAL_MS}). */
  readonly intervalMs?: number;
  /** Told of each checkpoint written and of each failure (the schedule carries on). */
  readonly onCheckpoint?: (c: StoredCheckpoint) => void;
  readonly onError?: (err: unknown) => void;
  /** Whether to sign now (the operator's leader only); asked before each checkpoint. Default always. */
  readonly active?: () => boolean;
}

export const DEFAULT_CHECKPOINT_EVERY = 10_000;
export const DEFAULT_CHECKPOINT_INTERVAL_MS = 1_000;

/** A running schedule of checkpoints; {@link stop} waits for the one under way. */
export class CheckpointSchedule {
  readonly #log: EventLog;
  readonly #signer: NoteSigner;
  readonly #opts: CheckpointScheduleOptions;
  readonly #every: number;
  readonly #unsubscribe: () => void;
  readonly #timer: NodeJS.Timeout;
  #since = 0;
  #running: Promise<void> | null = null;
  #again = false;
  #stopped = false;
  #last: StoredCheckpoint | null = null;

  constructor(log: EventLog, signer: NoteSigner, opts: CheckpointScheduleOptions = {}) {
    this.#log = log;
    this.#signer = signer;
    this.#opts = opts;
    this.#every = Math.max(1, Math.floor(opts.every ?? DEFAULT_CHECKPOINT_EVERY));
    const interval = Math.max(10, Math.floor(opts.intervalMs ?? DEFAULT_CHECKPOINT_INTERVAL_MS));
    // The tree starts following this process's appends now (a store hands it their leaves from the
    // moment it exists): the first checkpoint then reads back only what was appended before.
    void log.tree;
    this.#unsubscribe = log.subscribe((events) => {
      this.#since += events.length;
      if (this.#since >= this.#every) this.trigger();
    });
    this.#timer = setInterval(() => this.trigger(), interval);
    this.#timer.unref();
  }

  /** The newest checkpoint this schedule wrote or found. */
  get last(): StoredCheckpoint | null {
    return this.#last;
  }

  /** Writes a checkpoint now (after the one under way); resolves when it is written. */
  async now(): Promise<StoredCheckpoint | null> {
    this.trigger();
    while (this.#running !== null) await this.#running;
    return this.#last;
  }

  /** Asks for a checkpoint; runs at once unless one is under way, then once after it. */
  trigger(): void {
    if (this.#stopped) return;
    if (this.#running !== null) {
      this.#again = true;
      return;
    }
    this.#since = 0;
    this.#running = this.#run().finally(() => {
      this.#running = null;
      if (this.#again && !this.#stopped) {
        this.#again = false;
        this.trigger();
      }
    });
  }

  async #run(): Promise<void> {
    if (this.#opts.active !== undefined && !this.#opts.active()) return;
    try {
      const c = await writeCheckpoint(this.#log, this.#signer);
      if (c !== null && c.size !== this.#last?.size) {
        this.#last = c;
        this.#opts.onCheckpoint?.(c);
      }
    } catch (err) {
      this.#opts.onError?.(err);
    }
  }

  /** Stops the schedule and waits for a checkpoint under way. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#timer);
    this.#unsubscribe();
    while (this.#running !== null) await this.#running;
  }
}
