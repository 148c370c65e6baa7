/**
 * The Merkle tree of RFC 9162 §2.1, kept by its right edge (a "compact range" from 0): the roots of
 * the perfect subtrees that make up the tree, one per set bit of its size. Appending a leaf is a
 * binary increment (O(log n) hashes, about two on average), the root at the current size folds at
 * most 53 hashes, and every append reports the nodes it made final, so a store can write hashes and
 * tiles as the tree grows instead of recomputing them.
 */
import { bitLength, isIndex, shr, splitPoint } from "./bits.js";
import { EMPTY_ROOT, leafHash, nodeHash } from "./hash.js";
import type { Hash } from "./hash.js";
import { fail, ok, TlogErrorCode } from "./errors.js";
import type { Result } from "./errors.js";
import { tileEntryFor } from "./tile.js";
import type { TileEntry } from "./tile.js";

/**
 * A node of the tree by its coordinates: the root of the perfect subtree over leaves
 * `[index · 2^level, (index + 1) · 2^level)`. Level 0 holds the leaf hashes.
 */
export interface NodeId {
  readonly level: number;
  readonly index: number;
}

export interface TreeNode extends NodeId {
  readonly hash: Hash;
}

/** What one append made final. */
export interface Appended {
  /** The leaf's index (the tree's size before the append). */
  readonly index: number;
  /** Every node completed by this leaf, from its leaf hash up (1 + the trailing ones of `index`). */
  readonly nodes: readonly TreeNode[];
  /** Those of {@link nodes} that are tile hashes (levels 0, 8, 16, …), with their tile and position. */
  readonly tileEntries: readonly TileEntry[];
}

/**
 * The perfect subtrees that make up the leaves `[lo, hi)`, left to right, largest first, for a range
 * whose start is aligned as RFC 9162's splits align it (every range a proof names). Their hashes,
 * folded from the right (`h = node(nodes[i], h)`), give the range's Merkle Tree Hash.
 */
export function rangeNodes(lo: number, hi: number): NodeId[] {
  const out: NodeId[] = [];
  while (lo < hi) {
    const level = bitLength(hi - lo) - 1;
    out.push({ level, index: shr(lo, level) });
    lo += 2 ** level;
  }
  return out;
}

/** The nodes whose hashes give the root of a tree of `size` leaves: its right edge. */
export function rightEdge(size: number): NodeId[] {
  return rangeNodes(0, size);
}

/** Folds the hashes of {@link rangeNodes} into the range's hash (the empty range has none). */
export function foldRange(hashes: readonly Hash[]): Hash {
  let i = hashes.length - 1;
  if (i < 0) return EMPTY_ROOT;
  let h = hashes[i] as Hash;
  while (--i >= 0) h = nodeHash(hashes[i] as Hash, h);
  return h;
}

/** The Merkle Tree Hash of the given leaf hashes (RFC 9162 MTH), in O(n) hashes. */
export function rootOf(leafHashes: readonly Hash[]): Hash {
  const tree = new MerkleTree();
  for (const h of leafHashes) tree.append(h);
  return tree.root();
}

/** MTH of D[lo:hi) by RFC 9162's recursive definition; kept to check the tree against. */
export function recursiveRoot(leafHashes: readonly Hash[], lo = 0, hi = leafHashes.length): Hash {
  const n = hi - lo;
  if (n === 0) return EMPTY_ROOT;
  if (n === 1) return leafHashes[lo] as Hash;
  const k = splitPoint(n);
  return nodeHash(recursiveRoot(leafHashes, lo, lo + k), recursiveRoot(leafHashes, lo + k, hi));
}

/** An append-only Merkle tree held by its right edge; see the module comment. */
export class MerkleTree {
  #size = 0;
  /** Roots of the perfect subtrees of the right edge, largest (leftmost) first. */
  readonly #edge: Hash[] = [];

  /**
   * A tree resumed at `size` from the hashes of its right edge ({@link rightEdge}(size), in that
   * order), read back from where an earlier tree's appends were stored.
   */
  static resume(size: number, edge: readonly Hash[]): Result<MerkleTree> {
    if (!isIndex(size)) return fail(TlogErrorCode.InvalidArgument, "size", "a tree size is an integer from 0 to 2^53 - 1");
    const want = rightEdge(size).length;
    if (edge.length !== want) return fail(TlogErrorCode.InvalidArgument, "edge", `a tree of ${size} leaves has ${want} right-edge hashes, not ${edge.length}`);
    const tree = new MerkleTree();
    tree.#size = size;
    tree.#edge.push(...edge);
    return ok(tree);
  }

  get size(): number {
    return this.#size;
  }

  /** Appends a leaf by its hash ({@link leafHash} of the entry). */
  append(leaf: Hash): Appended {
    const index = this.#size;
    if (index >= Number.MAX_SAFE_INTEGER) throw new RangeError("the tree is full (2^53 - 1 leaves)");
    const nodes: TreeNode[] = [{ level: 0, index, hash: leaf }];
    let h = leaf;
    let level = 0;
    for (let n = index; n % 2 === 1; n = (n - 1) / 2) {
      h = nodeHash(this.#edge.pop() as Hash, h);
      level++;
      nodes.push({ level, index: shr(index, level), hash: h });
    }
    this.#edge.push(h);
    this.#size = index + 1;
    const tileEntries: TileEntry[] = [];
    for (const node of nodes) {
      const entry = tileEntryFor(node);
      if (entry !== null) tileEntries.push(entry);
    }
    return { index, nodes, tileEntries };
  }

  /** Appends an entry: its leaf hash is SHA-256(0x00 || data). */
  appendData(data: Uint8Array): Appended {
    return this.append(leafHash(data));
  }

  /** The root hash at the current size. */
  root(): Hash {
    return foldRange(this.#edge);
  }

  /** The right edge's nodes with their hashes (what {@link MerkleTree.resume} takes back). */
  edge(): TreeNode[] {
    return rightEdge(this.#size).map((id, i) => ({ ...id, hash: this.#edge[i] as Hash }));
  }
}
