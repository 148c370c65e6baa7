/**
 * Inclusion and consistency proofs of RFC 9162 §2.1.3–2.1.4: which stored hashes a proof needs (a
 * plan of O(log n) perfect-subtree nodes, read once each), building the proof from a hash reader,
 * and verifying one with the RFC's algorithms.
 */
import { isIndex, isPowerOfTwo, splitPoint } from "./bits.js";
import { HASH_SIZE, hashEquals, nodeHash } from "./hash.js";
import type { Hash } from "./hash.js";
import { fail, ok, TlogErrorCode } from "./errors.js";
import type { Result } from "./errors.js";
import { foldRange, rangeNodes, rightEdge } from "./tree.js";
import type { NodeId } from "./tree.js";

/**
 * Reads the hash of a complete node of the tree (see {@link NodeId}), synchronously or not. A
 * reader that cannot answer returns a failure (or throws, which the caller sees as it is).
 */
export type HashReader = (level: number, index: number) => Hash | Result<Hash> | Promise<Hash | Result<Hash>>;
/** A {@link HashReader} that answers at once. */
export type SyncHashReader = (level: number, index: number) => Hash | Result<Hash>;

/**
 * The nodes a proof (or a root) is made of: read each node's hash once, then {@link assemble}.
 * Proof element `i` is the fold of the next `groups[i]` nodes' hashes.
 */
export interface ProofPlan {
  readonly nodes: readonly NodeId[];
  readonly groups: readonly number[];
}

function planOf(ranges: readonly (readonly [number, number])[]): ProofPlan {
  const nodes: NodeId[] = [];
  const groups: number[] = [];
  for (const [lo, hi] of ranges) {
    const r = rangeNodes(lo, hi);
    nodes.push(...r);
    groups.push(r.length);
  }
  return { nodes, groups };
}

const badSize = (path: string) => fail(TlogErrorCode.InvalidArgument, path, "a tree size is an integer from 0 to 2^53 - 1");

/** The ranges of PATH(m, D[lo:hi)) (RFC 9162 §2.1.3.1), from the leaf up. */
function inclusionRanges(m: number, lo: number, hi: number, out: [number, number][]): void {
  if (hi - lo === 1) return;
  const k = splitPoint(hi - lo);
  if (m < lo + k) {
    inclusionRanges(m, lo, lo + k, out);
    out.push([lo + k, hi]);
  } else {
    inclusionRanges(m, lo + k, hi, out);
    out.push([lo, lo + k]);
  }
}

/** The nodes of the inclusion proof of leaf `index` in the tree of `size` leaves. */
export function planInclusion(index: number, size: number): Result<ProofPlan> {
  if (!isIndex(size)) return badSize("size");
  if (!isIndex(index) || index >= size) return fail(TlogErrorCode.InvalidArgument, "index", `leaf ${index} is not in a tree of ${size} leaves`);
  const ranges: [number, number][] = [];
  inclusionRanges(index, 0, size, ranges);
  return ok(planOf(ranges));
}

/** The ranges of SUBPROOF(m, D[lo:hi), b) (RFC 9162 §2.1.4.1); `b` is `lo === 0` on the old tree's path. */
function consistencyRanges(m: number, lo: number, hi: number, out: [number, number][]): void {
  if (m === hi) {
    if (lo !== 0) out.push([lo, hi]);
    return;
  }
  const k = splitPoint(hi - lo);
  if (m <= lo + k) {
    consistencyRanges(m, lo, lo + k, out);
    out.push([lo + k, hi]);
  } else {
    consistencyRanges(m, lo + k, hi, out);
    out.push([lo, lo + k]);
  }
}

/**
 * The nodes of the consistency proof from the tree of `oldSize` leaves to the tree of `newSize`
 * (0 < oldSize ≤ newSize; equal sizes need no proof). From the empty tree no proof exists: it is
 * consistent with every tree (ADR 0130).
 */
export function planConsistency(oldSize: number, newSize: number): Result<ProofPlan> {
  if (!isIndex(newSize)) return badSize("newSize");
  if (!isIndex(oldSize) || oldSize < 1 || oldSize > newSize) {
    return fail(TlogErrorCode.InvalidArgument, "oldSize", `a consistency proof goes from a size from 1 to the new size (${newSize}), not from ${oldSize}`);
  }
  const ranges: [number, number][] = [];
  if (oldSize < newSize) consistencyRanges(oldSize, 0, newSize, ranges);
  return ok(planOf(ranges));
}

/** The nodes whose hashes give the root of the tree of `size` leaves. */
export function planRoot(size: number): Result<ProofPlan> {
  if (!isIndex(size)) return badSize("size");
  const nodes = rightEdge(size);
  return ok({ nodes, groups: [nodes.length] });
}

/** The proof (or root, for {@link planRoot}) from the hashes of `plan.nodes`, in order. */
export function assemble(plan: ProofPlan, hashes: readonly Hash[]): Hash[] {
  if (hashes.length !== plan.nodes.length) throw new RangeError(`the plan has ${plan.nodes.length} nodes, not ${hashes.length}`);
  const out: Hash[] = [];
  let at = 0;
  for (const n of plan.groups) {
    out.push(foldRange(hashes.slice(at, at + n)));
    at += n;
  }
  return out;
}

function checked(read: Hash | Result<Hash>, node: NodeId): Result<Hash> {
  if (read instanceof Uint8Array) {
    return read.length === HASH_SIZE ? ok(read) : fail(TlogErrorCode.ReadFailed, "reader", `the reader answered ${read.length} bytes for node (${node.level}, ${node.index})`);
  }
  return read;
}

async function run(plan: Result<ProofPlan>, read: HashReader): Promise<Result<Hash[]>> {
  if (!plan.ok) return plan;
  const { nodes } = plan.value;
  const answers = await Promise.all(nodes.map((n) => read(n.level, n.index)));
  const hashes: Hash[] = [];
  for (const [i, a] of answers.entries()) {
    const h = checked(a, nodes[i] as NodeId);
    if (!h.ok) return h;
    hashes.push(h.value);
  }
  return ok(assemble(plan.value, hashes));
}

function runSync(plan: Result<ProofPlan>, read: SyncHashReader): Result<Hash[]> {
  if (!plan.ok) return plan;
  const hashes: Hash[] = [];
  for (const n of plan.value.nodes) {
    const h = checked(read(n.level, n.index), n);
    if (!h.ok) return h;
    hashes.push(h.value);
  }
  return ok(assemble(plan.value, hashes));
}

const first = (r: Result<Hash[]>): Result<Hash> => (r.ok ? ok(r.value[0] as Hash) : r);

/** The inclusion proof of leaf `index` in the tree of `size` leaves, from the leaf's sibling up. */
export function proveInclusion(index: number, size: number, read: HashReader): Promise<Result<Hash[]>> {
  return run(planInclusion(index, size), read);
}
export function proveInclusionSync(index: number, size: number, read: SyncHashReader): Result<Hash[]> {
  return runSync(planInclusion(index, size), read);
}

/** The consistency proof from the tree of `oldSize` leaves to the tree of `newSize`. */
export function proveConsistency(oldSize: number, newSize: number, read: HashReader): Promise<Result<Hash[]>> {
  return run(planConsistency(oldSize, newSize), read);
}
export function proveConsistencySync(oldSize: number, newSize: number, read: SyncHashReader): Result<Hash[]> {
  return runSync(planConsistency(oldSize, newSize), read);
}

/** The root of the tree of `size` leaves (any size the store has reached), from stored hashes. */
export async function rootAt(size: number, read: HashReader): Promise<Result<Hash>> {
  return first(await run(planRoot(size), read));
}
export function rootAtSync(size: number, read: SyncHashReader): Result<Hash> {
  return first(runSync(planRoot(size), read));
}

const invalid = (message: string) => fail(TlogErrorCode.InvalidProof, "proof", message);

/**
 * Verifies that `proof` shows the leaf with hash `leaf` at `index` in the tree of `size` leaves
 * whose root is `root` (RFC 9162 §2.1.3.2).
 */
export function verifyInclusion(leaf: Hash, index: number, size: number, proof: readonly Hash[], root: Hash): Result<undefined> {
  if (!isIndex(size)) return badSize("size");
  if (!isIndex(index) || index >= size) return fail(TlogErrorCode.InvalidArgument, "index", `leaf ${index} is not in a tree of ${size} leaves`);
  let fn = index;
  let sn = size - 1;
  let r = leaf;
  for (const p of proof) {
    if (sn === 0) return invalid("the proof is longer than the path");
    if (fn % 2 === 1 || fn === sn) {
      r = nodeHash(p, r);
      while (fn % 2 === 0 && fn !== 0) {
        fn /= 2;
        sn = Math.floor(sn / 2);
      }
    } else {
      r = nodeHash(r, p);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  if (sn !== 0) return invalid("the proof is shorter than the path");
  return hashEquals(r, root) ? ok(undefined) : invalid("the proof leads to another root");
}

/** RFC 9162 §2.1.4.2 steps 2–7 for 0 < oldSize < newSize: the roots the proof leads to, or why not. */
function runConsistency(oldSize: number, newSize: number, oldRoot: Hash, proof: readonly Hash[]): Result<{ fr: Hash; sr: Hash }> {
  const path = isPowerOfTwo(oldSize) ? [oldRoot, ...proof] : proof;
  let fn = oldSize - 1;
  let sn = newSize - 1;
  while (fn % 2 === 1) {
    fn = (fn - 1) / 2;
    sn = Math.floor(sn / 2);
  }
  let fr = path[0] as Hash;
  let sr = fr;
  for (let i = 1; i < path.length; i++) {
    const c = path[i] as Hash;
    if (sn === 0) return invalid("the proof is longer than the path");
    if (fn % 2 === 1 || fn === sn) {
      fr = nodeHash(c, fr);
      sr = nodeHash(c, sr);
      while (fn % 2 === 0 && fn !== 0) {
        fn /= 2;
        sn = Math.floor(sn / 2);
      }
    } else {
      sr = nodeHash(sr, c);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 ? ok({ fr, sr }) : invalid("the proof is shorter than the path");
}

/**
 * Verifies that `proof` shows the tree of `oldSize` leaves with root `oldRoot` to be a prefix of
 * the tree of `newSize` leaves with root `newRoot` (RFC 9162 §2.1.4.2). Equal sizes take an empty
 * proof and equal roots; from size 0 there is no proof to verify (see {@link planConsistency}).
 */
export function verifyConsistency(oldSize: number, newSize: number, oldRoot: Hash, newRoot: Hash, proof: readonly Hash[]): Result<undefined> {
  if (!isIndex(newSize)) return badSize("newSize");
  if (!isIndex(oldSize) || oldSize < 1 || oldSize > newSize) {
    return fail(TlogErrorCode.InvalidArgument, "oldSize", `a consistency proof goes from a size from 1 to the new size (${newSize}), not from ${oldSize}`);
  }
  if (oldSize === newSize) {
    if (proof.length !== 0) return invalid("equal sizes take an empty proof");
    return hashEquals(oldRoot, newRoot) ? ok(undefined) : invalid("equal sizes with different roots");
  }
  if (proof.length === 0) return invalid("the proof is empty");
  const roots = runConsistency(oldSize, newSize, oldRoot, proof);
  if (!roots.ok) return roots;
  if (!hashEquals(roots.value.fr, oldRoot)) return invalid("the proof does not lead to the old root");
  return hashEquals(roots.value.sr, newRoot) ? ok(undefined) : invalid("the proof does not lead to the new root");
}
