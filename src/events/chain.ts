/**
 * The hash chain as every adapter builds and checks it: the rows a prepared batch becomes after a
 * head (seqs, stream versions, links and hashes), and the walk that checks stored rows one by one
 * (what `verify` and a raw import run). Kept apart from any database so that both stores chain and
 * check the same bytes the same way.
 */
import type { KnownEvent } from "./catalog.js";
import { StoreError, StoreErrorCode } from "./errors.js";
import { chainHash, GENESIS_HASH } from "./hash.js";
import type { Prepared } from "./prepare.js";
import { validatedEvent } from "./rows.js";
import type { ChainPoint, StoredEvent, VerifyResult } from "./types.js";

/** A row exactly as a store keeps it: `data` is the canonical JSON text hashed, not the upcast value. */
export type RawEventRow = StoredEvent<string>;

/** A batch chained after a head: the rows to write, and the events to return once they are committed. */
export interface Chained {
  readonly rows: RawEventRow[];
  readonly events: KnownEvent[];
}

/**
 * Chains `batch` after `head`, each stream continuing from its version in `versions` (which it
 * updates). Throws `invalid_cause` when an event names a cause that is not an earlier event.
 */
export function chainBatch(batch: readonly Prepared[], head: ChainPoint, versions: Map<string, number>, time: string): Chained {
  let seq = head.seq;
  let prev = head.hash;
  const rows = new Array<RawEventRow>(batch.length);
  const events = new Array<KnownEvent>(batch.length);
  for (let i = 0; i < batch.length; i++) {
    const e = batch[i] as Prepared;
    seq++;
    const version = (versions.get(e.stream) ?? 0) + 1;
    versions.set(e.stream, version);
    if (e.causedBy !== null && e.causedBy >= seq) {
      throw new StoreError(StoreErrorCode.InvalidCause, `causedBy ${e.causedBy} is not an earlier event than seq ${seq}`);
    }
    const hash = chainHash(prev, seq, e.stream, version, e.type, e.schemaVersion, time, e.actor, e.causedBy, e.data);
    // Two literals rather than one object spread twice: this runs for every event appended.
    rows[i] = { seq, stream: e.stream, version, type: e.type, schemaVersion: e.schemaVersion, time, actor: e.actor, causedBy: e.causedBy, data: e.data, prevHash: prev, hash };
    // The registry validated e.value against its type's schema, so the row is that type's event.
    events[i] = validatedEvent({ seq, stream: e.stream, version, type: e.type, schemaVersion: e.schemaVersion, time, actor: e.actor, causedBy: e.causedBy, data: e.value, prevHash: prev, hash });
    prev = hash;
  }
  return { rows, events };
}

/** Why a walk stopped at a row. */
export interface ChainBreak {
  readonly ok: false;
  readonly seq: number;
  readonly reason: string;
}

/**
 * Checks stored rows in seq order from a start: no seq skipped, each row linked to the one before,
 * each row's hash its fields' hash. `count` is the number of rows from seq 1 that hold.
 */
export class ChainWalk {
  #prev: string;
  #next: number;
  #count: number;

  /** A walk from the first event, or from the row at `start.seq` whose `prevHash` is given (already checked to be verified). */
  constructor(start?: { readonly seq: number; readonly prevHash: string }) {
    this.#prev = start?.prevHash ?? GENESIS_HASH;
    this.#next = start?.seq ?? 1;
    this.#count = this.#next - 1;
  }

  /** Rows from seq 1 known to hold so far. */
  get count(): number {
    return this.#count;
  }

  /** The seq the next row must have. */
  get next(): number {
    return this.#next;
  }

  /** The chain point of the last row that held (seq 0 and the genesis hash before any). */
  get point(): ChainPoint {
    return { seq: this.#next - 1, hash: this.#prev };
  }

  /** Checks the next row; null when it holds (and the walk moves past it). */
  step(r: RawEventRow): ChainBreak | null {
    if (r.seq !== this.#next) return { ok: false, seq: r.seq, reason: `sequence gap: expected seq ${this.#next}, found ${r.seq} (a row was deleted)` };
    if (r.prevHash !== this.#prev) return { ok: false, seq: r.seq, reason: "prev_hash does not match the hash of the row before" };
    const h = chainHash(r.prevHash, r.seq, r.stream, r.version, r.type, r.schemaVersion, r.time, r.actor, r.causedBy, r.data);
    if (h !== r.hash) return { ok: false, seq: r.seq, reason: "hash does not match the row's fields (the row was edited)" };
    this.#prev = r.hash;
    this.#next++;
    this.#count++;
    return null;
  }

  /** The walk's result so far as a {@link VerifyResult}. */
  result(): VerifyResult {
    return { ok: true, count: this.#count };
  }
}

/**
 * Where `verify(from)` starts: from a verified point, the row at that seq must still be there
 * with the same hash, and is itself hashed again (an edit to it shows). `row` is the stored row at
 * `from.seq` (undefined when there is none).
 */
export function walkFrom(from: ChainPoint | undefined, row: RawEventRow | undefined): ChainWalk | ChainBreak {
  if (from === undefined || from.seq <= 0) return new ChainWalk();
  if (row === undefined) return { ok: false, seq: from.seq, reason: `the verified event ${from.seq} is gone (a row was deleted)` };
  if (row.hash !== from.hash) return { ok: false, seq: from.seq, reason: "the hash of an already verified event changed (the chain was rewritten)" };
  return new ChainWalk({ seq: from.seq, prevHash: row.prevHash });
}
