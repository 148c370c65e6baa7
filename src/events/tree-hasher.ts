/**
 * The hashes of the Merkle tree, computed off the appending thread (docs/adr/0146).
 *
 * Extending the tree by a batch of leaves costs one SHA-256 per leaf on average (the binary
 * increment of the right edge), and each leaf one more over the row's bytes. So one worker thread
 * per process takes the entries of this process's own appends as they commit ({@link LeafFeed}),
 * hashes and keeps their leaves, and at a catch-up returns them (the level-0 tiles) with the new
 * right edge and the few nodes at tile levels above 0 (levels 8, 16, …: one per 256 leaves); rows
 * read back are hashed here and handed over the same way. The thread only
 * computes: what is stored, when, and which root is signed stay on the caller's side, in order,
 * so nothing here can sign two roots for one size. Small batches, and any failure of the thread,
 * are computed in place by the same function.
 *
 * The thread's script is evaluated (CommonJS, node:crypto only), so it starts the same from the
 * sources, the bundle and a read-only root filesystem.
 */
import { Buffer } from "node:buffer";
import { hash as digest } from "node:crypto";
// Loaded when the thread starts: a process that only reads the log never loads worker_threads.
import type { Worker } from "node:worker_threads";
import type { Hash } from "../tlog/index.js";

/** Nodes of the tree at tile levels above 0 that a batch completed: tree level, index, hash. */
export interface UpperNode {
  readonly level: number;
  readonly index: number;
  readonly hash: Hash;
}

/** The tree after a batch: its right edge (largest subtree first) and the upper tile-level nodes made. */
export interface Extended {
  readonly edge: Hash[];
  readonly upper: UpperNode[];
}

/** Batches smaller than this are hashed in place: a round trip to the thread costs more. */
export const WORKER_MIN_LEAVES = 256;

/**
 * The extension itself, self-contained (the thread evaluates its text: it may use only globals):
 * the right edge's binary increment per leaf, collecting the nodes at levels 8, 16, ….
 */
function extendPlain(size: number, edge: Uint8Array[], leaves: Uint8Array, sha: (b: Uint8Array) => Uint8Array): { edge: Uint8Array[]; levels: number[]; indexes: number[]; hashes: Uint8Array[] } {
  const scratch = new Uint8Array(65);
  scratch[0] = 1;
  const levels: number[] = [];
  const indexes: number[] = [];
  const hashes: Uint8Array[] = [];
  const count = leaves.length / 32;
  for (let k = 0; k < count; k++) {
    const index = size + k;
    let h = leaves.subarray(k * 32, k * 32 + 32);
    let level = 0;
    for (let n = index; n % 2 === 1; n = (n - 1) / 2) {
      scratch.set(edge.pop() as Uint8Array, 1);
      scratch.set(h, 33);
      h = sha(scratch);
      level++;
      if (level % 8 === 0) {
        levels.push(level);
        indexes.push(Math.floor(index / 2 ** level));
        hashes.push(h);
      }
    }
    edge.push(h);
  }
  return { edge, levels, indexes, hashes };
}

const sha256 = (b: Uint8Array): Uint8Array => digest("sha256", b, "buffer") as Uint8Array;

/** Leaves a feed keeps at most (8 MiB); past that it starts over and the tree reads rows back. */
const MAX_KEPT = 262_144;
/** Feeds the thread keeps leaves for at most: the least recently used is dropped (its tree reads rows back). */
const THREAD_FEEDS = 8;

/**
 * Kept leaves, contiguous from seq `first`, in fixed buffers of 2,048 (64 KiB) where they sit at
 * [start, start + count): appending copies in, taking copies out, nothing is moved or regrown.
 * Self-contained (the thread evaluates the text of the functions below).
 */
interface Kept { first: number; start: number; count: number; chunks: Uint8Array[] }

/** An empty {@link Kept} from seq `first`. */
const emptyKept = (first: number): Kept => ({ first, start: 0, count: 0, chunks: [] });

/** Appends hashes (32 bytes each) after the kept ones. */
function keptAppend(k: Kept, hashes: Uint8Array): void {
  const n = hashes.length / 32;
  for (let done = 0; done < n;) {
    const at = k.start + k.count;
    const c = Math.floor(at / 2048);
    if (c === k.chunks.length) k.chunks.push(new Uint8Array(2048 * 32));
    const position = at % 2048;
    const take = Math.min(n - done, 2048 - position);
    (k.chunks[c] as Uint8Array).set(hashes.subarray(done * 32, (done + take) * 32), position * 32);
    k.count += take;
    done += take;
  }
}

/** Drops the hashes up to seq `size`. */
function keptDrop(k: Kept, size: number): void {
  if (k.first > size) return;
  const drop = Math.min(k.count, size + 1 - k.first);
  k.start += drop;
  k.count -= drop;
  k.first += drop;
  const spent = Math.floor(k.start / 2048);
  k.chunks.splice(0, spent);
  k.start -= spent * 2048;
}

/** The leaves of seqs (size, to], 32 bytes each, when all are kept (after dropping those up to `size`); null otherwise. */
function keptRange(k: Kept, size: number, to: number): Uint8Array | null {
  keptDrop(k, size);
  if (k.count === 0 || k.first !== size + 1 || k.first + k.count - 1 < to) return null;
  const n = to - size;
  const out = new Uint8Array(n * 32);
  for (let done = 0; done < n;) {
    const at = k.start + done;
    const position = at % 2048;
    const take = Math.min(n - done, 2048 - position);
    out.set((k.chunks[Math.floor(at / 2048)] as Uint8Array).subarray(position * 32, (position + take) * 32), done * 32);
    done += take;
  }
  return out;
}

/** The hash kept for seq `seq`, or null when it is not kept. */
function keptAt(k: Kept, seq: number): Uint8Array | null {
  if (seq < k.first || seq >= k.first + k.count) return null;
  const at = k.start + seq - k.first;
  const position = at % 2048;
  return (k.chunks[Math.floor(at / 2048)] as Uint8Array).subarray(position * 32, position * 32 + 32);
}

/** Hashes entries (each 0x00 ‖ row bytes, ending at `ends`) into leaves kept after the ones before. */
function keptHash(k: Kept, entries: Uint8Array, ends: Uint32Array, sha: (b: Uint8Array) => Uint8Array): void {
  let from = 0;
  for (const end of ends) {
    keptAppend(k, sha(entries.subarray(from, end)));
    from = end;
  }
}

const SCRIPT = `
const { parentPort } = require("node:worker_threads");
const crypto = require("node:crypto");
const sha = crypto.hash ? (b) => crypto.hash("sha256", b, "buffer") : (b) => crypto.createHash("sha256").update(b).digest();
const extend = (${extendPlain.toString()});
const keptAppend = (${keptAppend.toString()});
const keptDrop = (${keptDrop.toString()});
const keptRange = (${keptRange.toString()});
const keptHash = (${keptHash.toString()});
const feeds = new Map();
const feed = (id, first) => {
  let k = feeds.get(id);
  feeds.delete(id);
  if (first !== undefined && (k === undefined || k.first + k.count !== first || k.count >= ${MAX_KEPT})) k = { first, start: 0, count: 0, chunks: [] };
  if (k === undefined) return undefined;
  feeds.set(id, k);
  while (feeds.size > ${THREAD_FEEDS}) feeds.delete(feeds.keys().next().value);
  return k;
};
const grow = (m, size, edgeBytes, leaves) => {
  const edge = [];
  for (let i = 0; i < edgeBytes.length; i += 32) edge.push(edgeBytes.subarray(i, i + 32));
  const r = extend(size, edge, leaves, sha);
  const out = Buffer.concat([...r.edge, ...r.hashes]);
  const buffer = out.buffer.slice(out.byteOffset, out.byteOffset + out.byteLength);
  return { id: m.id, edges: r.edge.length, levels: r.levels, indexes: r.indexes, bytes: buffer };
};
parentPort.on("message", (m) => {
  try {
    if (m.op === "entries") {
      keptHash(feed(m.feed, m.first), new Uint8Array(m.entries, 0, m.length), new Uint32Array(m.ends, 0, m.rows), sha);
      // The buffers go back to be staged into again: fresh memory costs a page fault per 4 KiB.
      parentPort.postMessage({ spare: true, entries: m.entries, ends: m.ends }, [m.entries, m.ends]);
    } else if (m.op === "leaves") {
      keptAppend(feed(m.feed, m.first), new Uint8Array(m.leaves));
    } else if (m.op === "drop") {
      feeds.delete(m.feed);
    } else if (m.op === "kept") {
      const k = feed(m.feed);
      const leaves = k === undefined ? null : keptRange(k, m.size, m.to);
      if (leaves === null) parentPort.postMessage({ id: m.id, missing: true });
      else {
        const reply = grow(m, m.size, Buffer.from(m.edge), leaves);
        reply.leaves = leaves.buffer;
        parentPort.postMessage(reply, [reply.bytes, reply.leaves]);
      }
    } else {
      const reply = grow(m, m.size, Buffer.from(m.edge), Buffer.from(m.leaves));
      parentPort.postMessage(reply, [reply.bytes]);
    }
  } catch (err) {
    if (m.id !== undefined) parentPort.postMessage({ id: m.id, error: String(err && err.message || err) });
  }
});
`;

interface Reply { id: number; spare?: true; entries?: ArrayBuffer; ends?: ArrayBuffer; edges?: number; levels?: number[]; indexes?: number[]; bytes?: ArrayBuffer; leaves?: ArrayBuffer; missing?: true; error?: string }

function asHashes(bytes: Buffer, from: number, count: number): Hash[] {
  const out: Hash[] = [];
  for (let i = 0; i < count; i++) out.push(Uint8Array.from(bytes.subarray((from + i) * 32, (from + i + 1) * 32)) as Hash);
  return out;
}

/** The extension a reply carries, or null when it carries none. */
function extendedOf(reply: Reply): Extended | null {
  if (reply.error !== undefined || reply.bytes === undefined || reply.edges === undefined || reply.levels === undefined || reply.indexes === undefined) return null;
  const bytes = Buffer.from(reply.bytes);
  const upperHashes = asHashes(bytes, reply.edges, reply.levels.length);
  return {
    edge: asHashes(bytes, 0, reply.edges),
    upper: reply.levels.map((level, i) => ({ level, index: reply.indexes?.[i] as number, hash: upperHashes[i] as Hash })),
  };
}

/** Extends a tree of `size` leaves with right edge `edge` by `leaves` (32 bytes each), on this thread. */
export function extendTree(size: number, edge: readonly Hash[], leaves: Uint8Array): Extended {
  const r = extendPlain(size, [...edge], leaves, sha256);
  return {
    edge: r.edge.map((h) => Uint8Array.from(h) as Hash),
    upper: r.levels.map((level, i) => ({ level, index: r.indexes[i] as number, hash: Uint8Array.from(r.hashes[i] as Uint8Array) as Hash })),
  };
}

const transferable = (b: Uint8Array): ArrayBuffer => {
  const copy = Uint8Array.from(b);
  return copy.buffer;
};

/** The process's hashing thread: started on first use, never keeping the process alive. */
class TreeHasher {
  #worker: Worker | null = null;
  #failed = false;
  #next = 1;
  #feeds = 0;
  #answered = 0;
  readonly #waiting = new Map<number, { resolve: (r: Reply) => void; reject: (e: Error) => void }>();
  /** Staging buffers the thread is done with. */
  readonly #spares: { entries: ArrayBuffer; ends: ArrayBuffer }[] = [];

  /** A staging buffer pair of at least these sizes: one the thread gave back, or new. */
  staging(bytes: number, rows: number): { entries: Buffer; ends: Uint32Array } {
    const i = this.#spares.findIndex((s) => s.entries.byteLength >= bytes && s.ends.byteLength >= 4 * rows);
    const spare = i < 0 ? undefined : this.#spares.splice(i, 1)[0];
    if (spare !== undefined) return { entries: Buffer.from(spare.entries), ends: new Uint32Array(spare.ends) };
    return { entries: Buffer.allocUnsafeSlow(bytes), ends: new Uint32Array(rows) };
  }

  /** The thread, started if it is not; null when it cannot run (then everything is hashed in place). */
  start(): Worker | null {
    if (this.#worker !== null || this.#failed) return this.#worker;
    try {
      const w = new (process.getBuiltinModule("node:worker_threads").Worker)(SCRIPT, { eval: true });
      w.unref();
      w.on("message", (r: Reply) => {
        if (r.spare === true) {
          if (r.entries !== undefined && r.ends !== undefined && this.#spares.length < MAX_SPARES) this.#spares.push({ entries: r.entries, ends: r.ends });
          return;
        }
        const p = this.#waiting.get(r.id);
        this.#waiting.delete(r.id);
        if (this.#waiting.size === 0) w.unref();
        p?.resolve(r);
      });
      const down = (err: unknown): void => {
        this.#failed = true;
        this.#worker = null;
        for (const p of this.#waiting.values()) p.reject(err instanceof Error ? err : new Error(String(err)));
        this.#waiting.clear();
      };
      w.on("error", down);
      w.on("exit", (code) => { if (this.#worker === w) down(new Error(`the tree's hashing thread ended (${code})`)); });
      this.#worker = w;
    } catch {
      this.#failed = true;
    }
    return this.#worker;
  }

  /** Whether the thread has failed (it is not started again). */
  get failed(): boolean {
    return this.#failed;
  }

  /** Batches the thread has hashed (a test's way to see it ran). */
  get answered(): number {
    return this.#answered;
  }

  /** Posts a message that wants no answer (to a running thread). */
  tell(message: Record<string, unknown>, transfer: ArrayBuffer[]): void {
    this.#worker?.postMessage(message, transfer);
  }

  /** Posts a request and waits for its answer; rejects when the thread fails meanwhile. */
  async ask(message: Record<string, unknown>, transfer: ArrayBuffer[]): Promise<Reply> {
    const w = this.start();
    if (w === null) throw new Error("the tree's hashing thread cannot run");
    const id = this.#next++;
    const reply = await new Promise<Reply>((resolve, reject) => {
      this.#waiting.set(id, { resolve, reject });
      // While an answer is awaited the thread keeps the process alive; not otherwise.
      w.ref();
      w.postMessage({ ...message, id }, transfer);
    });
    if (reply.error === undefined && reply.missing !== true) this.#answered++;
    return reply;
  }

  /** A new feed of one tree's leaves (see {@link LeafFeed}). */
  feed(): LeafFeed {
    return new LeafFeed(this, ++this.#feeds);
  }

  /** {@link extendTree} on the thread; in place when the batch is small or the thread cannot run. */
  async extend(size: number, edge: readonly Hash[], leaves: Uint8Array): Promise<Extended> {
    const count = leaves.length / 32;
    if (count < WORKER_MIN_LEAVES || this.start() === null) return extendTree(size, edge, leaves);
    const edgeBytes = transferable(Buffer.concat(edge));
    const leavesBytes = transferable(leaves);
    try {
      return extendedOf(await this.ask({ size, edge: edgeBytes, leaves: leavesBytes }, [edgeBytes, leavesBytes])) ?? extendTree(size, edge, leaves);
    } catch {
      return extendTree(size, edge, leaves);
    }
  }
}

/** Rows a feed stages before it sends them to the thread (or hashes them in place), and bytes. */
const STAGE_ROWS = 4_096;
const STAGE_BYTES = 1 << 20;

/** Staging buffers the hashing thread gives back, kept at most. */
const MAX_SPARES = 4;

/** Entries staged in one buffer (sent to the thread as it is) and where each ends. */
class Staged {
  readonly #hasher: TreeHasher;
  entries: Buffer = Buffer.allocUnsafeSlow(0);
  ends: Uint32Array = new Uint32Array(0);
  bytes = 0;
  rows = 0;

  constructor(hasher: TreeHasher) {
    this.#hasher = hasher;
  }

  add(entries: Uint8Array, ends: Uint32Array): void {
    if (this.bytes + entries.byteLength > this.entries.length || this.rows + ends.length > this.ends.length) {
      const next = this.#hasher.staging(Math.max(STAGE_BYTES + (1 << 16), this.bytes + entries.byteLength), Math.max(STAGE_ROWS + 256, this.rows + ends.length));
      this.entries.copy(next.entries, 0, 0, this.bytes);
      next.ends.set(this.ends.subarray(0, this.rows));
      this.entries = next.entries;
      this.ends = next.ends;
    }
    this.entries.set(entries, this.bytes);
    for (let i = 0; i < ends.length; i++) this.ends[this.rows + i] = this.bytes + (ends[i] as number);
    this.bytes += entries.byteLength;
    this.rows += ends.length;
  }

  /** The staged entries and ends, in buffers of their own (transferable); starts over empty. */
  take(): { entries: Uint8Array; ends: Uint32Array } {
    const out = { entries: this.entries.subarray(0, this.bytes), ends: this.ends.subarray(0, this.rows) };
    this.entries = Buffer.allocUnsafeSlow(0);
    this.ends = new Uint32Array(0);
    this.bytes = 0;
    this.rows = 0;
    return out;
  }
}

/**
 * The leaves of one tree's own appends, hashed off the appending thread (docs/adr/0146): the
 * store hands over each committed append's entries (the rows' bytes, each after a 0x00), and
 * the feed stages them and sends them to the hashing thread in batches, which hashes and keeps
 * the leaves. A catch-up then asks the thread for the leaves of the seqs it extends by, with the
 * tree's new right edge and upper nodes, in one round trip. A feed that never grows past a batch
 * (a short command's few appends), and every feed when the thread cannot run, hashes in place.
 * Anything the feed no longer holds (a gap, the cap, a thread that failed or dropped it) is
 * answered with null, and the tree reads those rows back instead.
 */
export class LeafFeed {
  readonly #hasher: TreeHasher;
  readonly #id: number;
  /** Kept rows, seqs [first, first + count): hashed (on the thread, or `local`), then `staged`. */
  #first = 0;
  #count = 0;
  #remote = false;
  readonly #local: Kept = emptyKept(0);
  /** The kept rows' chain hashes, here: what the next row read back must link to. */
  #hashes: Kept = emptyKept(0);
  #staged: Staged;

  constructor(hasher: TreeHasher, id: number) {
    this.#hasher = hasher;
    this.#id = id;
    this.#staged = new Staged(hasher);
  }

  /** Seq of the first row kept, or null when none is. */
  get first(): number | null {
    return this.#count === 0 ? null : this.#first;
  }

  /**
   * Takes the entries and chain hashes (32 bytes each) of the rows from seq `first` an append
   * committed; a gap (another process appended) starts over.
   */
  take(first: number, entries: Uint8Array, ends: Uint32Array, hashes: Uint8Array): void {
    const n = ends.length;
    if (n === 0) return;
    if (this.#count === 0 || this.#first + this.#count !== first || this.#count + n > MAX_KEPT) this.#reset(first);
    this.#staged.add(entries, ends);
    keptAppend(this.#hashes, hashes);
    this.#count += n;
    if (this.#staged.rows >= STAGE_ROWS || this.#staged.bytes >= STAGE_BYTES) this.#settle(true);
  }

  /**
   * The leaves of seqs (size, to] (32 bytes each), a tree of `size` leaves with right edge `edge`
   * extended by them, and the chain hash of row `to`; null when the feed does not hold every one.
   */
  async extend(size: number, edge: readonly Hash[], to: number): Promise<{ leaves: Uint8Array; extended: Extended; last: string } | null> {
    if (this.#count === 0 || to <= size) return null;
    this.#settle(to - size >= WORKER_MIN_LEAVES);
    // What the catch-up no longer needs is forgotten here and on the thread alike.
    const drop = Math.max(0, Math.min(this.#count, size + 1 - this.#first));
    this.#first += drop;
    this.#count -= drop;
    keptDrop(this.#hashes, size);
    const lastHash = keptAt(this.#hashes, to);
    if (this.#count === 0 || this.#first !== size + 1 || this.#first + this.#count - 1 < to || lastHash === null) return null;
    const last = Buffer.from(lastHash).toString("hex");
    if (!this.#remote) {
      const leaves = keptRange(this.#local, size, to);
      return leaves === null ? null : { leaves, extended: await this.#hasher.extend(size, edge, leaves), last };
    }
    const edgeBytes = transferable(Buffer.concat(edge));
    try {
      const reply = await this.#hasher.ask({ op: "kept", feed: this.#id, size, to, edge: edgeBytes }, [edgeBytes]);
      const extended = extendedOf(reply);
      if (extended !== null && reply.leaves !== undefined && reply.leaves.byteLength === (to - size) * 32) return { leaves: new Uint8Array(reply.leaves), extended, last };
    } catch {
      // The thread failed: what it held is gone.
    }
    this.#reset(to + 1);
    return null;
  }

  /** Starts over from seq `first`, empty (and forgets what the thread held). */
  #reset(first: number): void {
    if (this.#remote) this.#hasher.tell({ op: "drop", feed: this.#id }, []);
    this.#remote = false;
    this.#first = first;
    this.#count = 0;
    Object.assign(this.#local, emptyKept(first));
    this.#hashes = emptyKept(first);
    this.#staged = new Staged(this.#hasher);
  }

  /** Hashes the staged rows: on the thread when it holds this feed's leaves or `toThread` and it runs; in place otherwise. */
  #settle(toThread: boolean): void {
    if (this.#staged.rows === 0) return;
    const { entries, ends } = this.#staged.take();
    const stagedFirst = this.#first + this.#count - ends.length;
    if (!this.#remote && toThread && this.#hasher.start() !== null) {
      // The thread takes over the leaves hashed here so far, then the staged rows.
      if (this.#local.count > 0) {
        const leaves = keptRange(this.#local, this.#local.first - 1, this.#local.first + this.#local.count - 1) as Uint8Array;
        this.#hasher.tell({ op: "leaves", feed: this.#id, first: this.#local.first, leaves: leaves.buffer }, [leaves.buffer as ArrayBuffer]);
        Object.assign(this.#local, { start: 0, count: 0, chunks: [] });
      }
      this.#remote = true;
    }
    if (this.#remote && !this.#hasher.failed) {
      // The staging buffers are this feed's alone and dropped here: they move to the thread without a copy.
      const bytes = entries.buffer as ArrayBuffer;
      const endBytes = ends.buffer as ArrayBuffer;
      this.#hasher.tell({ op: "entries", feed: this.#id, first: stagedFirst, entries: bytes, length: entries.byteLength, ends: endBytes, rows: ends.length }, [bytes, endBytes]);
      return;
    }
    if (this.#remote) {
      // The thread failed with this feed's leaves: start over from the staged rows, hashed here.
      this.#remote = false;
      Object.assign(this.#local, { first: stagedFirst, start: 0, count: 0, chunks: [] });
      this.#first = stagedFirst;
      this.#count = ends.length;
    }
    if (this.#local.count === 0) this.#local.first = stagedFirst;
    keptHash(this.#local, entries, ends, sha256);
  }
}

/** The one hashing thread of this process. */
export const treeHasher = new TreeHasher();
