/**
 * The interior hashes of the Merkle tree, computed off the appending thread (docs/adr/0146).
 *
 * Extending the tree by a batch of leaves costs one SHA-256 per leaf on average (the binary
 * increment of the right edge), about half the tree's work; the leaves themselves are hashed as
 * the events are written, and the level-0 tiles are those leaves. So a catch-up hands the right
 * edge and the batch's leaves to one worker thread per process, which returns the new right edge
 * and the few nodes at tile levels above 0 (levels 8, 16, …: one per 256 leaves). The thread only
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

const SCRIPT = `
const { parentPort } = require("node:worker_threads");
const crypto = require("node:crypto");
const sha = crypto.hash ? (b) => crypto.hash("sha256", b, "buffer") : (b) => crypto.createHash("sha256").update(b).digest();
const extend = (${extendPlain.toString()});
parentPort.on("message", (m) => {
  try {
    const edgeBytes = Buffer.from(m.edge);
    const edge = [];
    for (let i = 0; i < edgeBytes.length; i += 32) edge.push(edgeBytes.subarray(i, i + 32));
    const r = extend(m.size, edge, Buffer.from(m.leaves), sha);
    const out = Buffer.concat([...r.edge, ...r.hashes]);
    const buffer = out.buffer.slice(out.byteOffset, out.byteOffset + out.byteLength);
    parentPort.postMessage({ id: m.id, edges: r.edge.length, levels: r.levels, indexes: r.indexes, bytes: buffer }, [buffer]);
  } catch (err) {
    parentPort.postMessage({ id: m.id, error: String(err && err.message || err) });
  }
});
`;

interface Reply { id: number; edges?: number; levels?: number[]; indexes?: number[]; bytes?: ArrayBuffer; error?: string }

function asHashes(bytes: Buffer, from: number, count: number): Hash[] {
  const out: Hash[] = [];
  for (let i = 0; i < count; i++) out.push(Uint8Array.from(bytes.subarray((from + i) * 32, (from + i + 1) * 32)) as Hash);
  return out;
}

/** Extends a tree of `size` leaves with right edge `edge` by `leaves` (32 bytes each), on this thread. */
export function extendTree(size: number, edge: readonly Hash[], leaves: Buffer): Extended {
  const r = extendPlain(size, [...edge], leaves, sha256);
  return {
    edge: r.edge.map((h) => Uint8Array.from(h) as Hash),
    upper: r.levels.map((level, i) => ({ level, index: r.indexes[i] as number, hash: Uint8Array.from(r.hashes[i] as Uint8Array) as Hash })),
  };
}

/** The process's hashing thread: started on first use, never keeping the process alive. */
class TreeHasher {
  #worker: Worker | null = null;
  #failed = false;
  #next = 1;
  #answered = 0;
  readonly #waiting = new Map<number, { resolve: (r: Reply) => void; reject: (e: Error) => void }>();

  #start(): Worker | null {
    if (this.#worker !== null || this.#failed) return this.#worker;
    try {
      const w = new (process.getBuiltinModule("node:worker_threads").Worker)(SCRIPT, { eval: true });
      w.unref();
      w.on("message", (r: Reply) => {
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

  /** Batches the thread has hashed (a test's way to see it ran). */
  get answered(): number {
    return this.#answered;
  }

  /** {@link extendTree} on the thread; in place when the batch is small or the thread cannot run. */
  async extend(size: number, edge: readonly Hash[], leaves: Buffer): Promise<Extended> {
    const count = leaves.length / 32;
    const w = count >= WORKER_MIN_LEAVES ? this.#start() : null;
    if (w === null) return extendTree(size, edge, leaves);
    const id = this.#next++;
    const edgeCopy = Buffer.concat(edge);
    const leavesCopy = Uint8Array.from(leaves);
    let reply: Reply;
    try {
      reply = await new Promise<Reply>((resolve, reject) => {
        this.#waiting.set(id, { resolve, reject });
        // While an answer is awaited the thread keeps the process alive; not otherwise.
        w.ref();
        w.postMessage({ id, size, edge: edgeCopy.buffer.slice(edgeCopy.byteOffset, edgeCopy.byteOffset + edgeCopy.byteLength), leaves: leavesCopy.buffer }, [leavesCopy.buffer]);
      });
    } catch {
      return extendTree(size, edge, leaves);
    }
    if (reply.error !== undefined || reply.bytes === undefined || reply.edges === undefined || reply.levels === undefined || reply.indexes === undefined) {
      return extendTree(size, edge, leaves);
    }
    this.#answered++;
    const bytes = Buffer.from(reply.bytes);
    const upperHashes = asHashes(bytes, reply.edges, reply.levels.length);
    return {
      edge: asHashes(bytes, 0, reply.edges),
      upper: reply.levels.map((level, i) => ({ level, index: reply.indexes?.[i] as number, hash: upperHashes[i] as Hash })),
    };
  }
}

/** The one hashing thread of this process. */
export const treeHasher = new TreeHasher();
