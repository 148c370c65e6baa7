/**
 * A fake transparency log for the witness's tests and benchmark (not exported through the door):
 * a Merkle tree of `entry <i>` leaves, its signed checkpoints at any size it has had, and
 * add-checkpoint bodies with real consistency proofs, all made with `src/tlog`.
 */
import { Buffer } from "node:buffer";
import { createHash } from "node:crypto";
import { formatHash, MerkleTree, noteSignerFromSeed, proveConsistencySync, rootAtSync, signCheckpoint } from "../tlog/index.js";
import type { Ed25519NoteSigner, Hash, Result } from "../tlog/index.js";

export function must<T>(r: Result<T> | { ok: true; value: T } | { ok: false; error: { message: string } }): T {
  if (!r.ok) throw new Error(`expected success: ${r.error.message}`);
  return r.value;
}

export class FakeLog {
  readonly signer: Ed25519NoteSigner;
  private readonly tree = new MerkleTree();
  private readonly nodes = new Map<string, Hash>();

  private readonly fork: string;

  /**
   * `seed` makes the key (the origin by default), `keyName` names it (the origin by default);
   * `fork` changes every entry, so a fork's checkpoints share nothing with the log's but its
   * origin and key.
   */
  constructor(
    readonly origin: string,
    o: { readonly seed?: string; readonly fork?: string; readonly keyName?: string } = {},
  ) {
    this.fork = o.fork ?? "";
    this.signer = must(noteSignerFromSeed(o.keyName ?? origin, createHash("sha256").update(o.seed ?? origin).digest()));
  }

  get size(): number {
    return this.tree.size;
  }

  /** `<origin> <verifier key>`: the line a witness is configured with. */
  get line(): string {
    return `${this.origin} ${this.signer.verifierKey}`;
  }

  /** Appends `n` entries. */
  grow(n: number): this {
    for (let i = 0; i < n; i++) {
      const appended = this.tree.appendData(Buffer.from(`${this.fork}entry ${this.tree.size}`));
      for (const node of appended.nodes) this.nodes.set(`${node.level}/${node.index}`, node.hash);
    }
    return this;
  }

  private readonly read = (level: number, index: number): Hash => {
    const h = this.nodes.get(`${level}/${index}`);
    if (h === undefined) throw new Error(`node ${level}/${index} is not in the fake log`);
    return h;
  };

  root(size: number = this.size): Hash {
    return must(rootAtSync(size, this.read));
  }

  /** The log's signed checkpoint at `size` (any size it has had). */
  checkpoint(size: number = this.size, signers = [this.signer]): string {
    return must(signCheckpoint({ origin: this.origin, size, root: this.root(size), extensions: [] }, signers));
  }

  /** The consistency proof from `from` to `to`, in base64 lines; none from 0 or between equal sizes. */
  proof(from: number, to: number = this.size): string[] {
    if (from === 0 || from === to) return [];
    return must(proveConsistencySync(from, to, this.read)).map(formatHash);
  }

  /** An add-checkpoint body from `old` to `size`. */
  body(old: number, size: number = this.size): string {
    return `old ${old}\n${this.proof(old, size).map((l) => `${l}\n`).join("")}\n${this.checkpoint(size)}`;
  }
}
