import { Buffer } from "node:buffer";
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { MerkleTree } from "../tlog/index.js";
import type { Hash } from "../tlog/index.js";
import { extendTree, treeHasher, WORKER_MIN_LEAVES } from "./tree-hasher.js";

const leaf = (i: number): Hash => createHash("sha256").update(`leaf ${i}`).digest() as unknown as Hash;
const hex = (hs: readonly Uint8Array[]): string[] => hs.map((h) => Buffer.from(h).toString("hex"));

/** What MerkleTree (the reference) gives for the same batch: its edge and the nodes at levels 8, 16, …. */
function reference(tree: MerkleTree, from: number, count: number): { edge: string[]; upper: string[] } {
  const upper: string[] = [];
  for (let i = 0; i < count; i++) {
    for (const n of tree.append(leaf(from + i)).nodes) if (n.level > 0 && n.level % 8 === 0) upper.push(`${n.level}/${n.index}/${Buffer.from(n.hash).toString("hex")}`);
  }
  return { edge: hex(tree.edge().map((n) => n.hash)), upper };
}

describe("the tree's hashing off the appending thread", () => {
  it("gives the same right edge and upper tile nodes as the Merkle tree, in place and on the thread, batch after batch", async () => {
    const tree = new MerkleTree();
    let edge: Hash[] = [];
    let size = 0;
    const answered = treeHasher.answered;
    // Batches across tile boundaries, below and above the thread's threshold, up past a level-2 node.
    for (const count of [1, 255, 3, WORKER_MIN_LEAVES, 65_600, 1, 700]) {
      const want = reference(tree, size, count);
      const leaves = Buffer.concat(Array.from({ length: count }, (_, i) => leaf(size + i)));
      const here = extendTree(size, edge, leaves);
      const there = await treeHasher.extend(size, edge, leaves);
      for (const got of [here, there]) {
        expect(hex(got.edge)).toEqual(want.edge);
        expect(got.upper.map((u) => `${u.level}/${u.index}/${Buffer.from(u.hash).toString("hex")}`)).toEqual(want.upper);
      }
      edge = there.edge;
      size += count;
    }
    expect(size).toBe(66_816);
    // The batches of 256 leaves and more went to the thread (a failed thread would hash them here).
    expect(treeHasher.answered - answered).toBe(3);
    const resumed = MerkleTree.resume(size, edge);
    expect(resumed.ok && hex([resumed.value.root()])).toEqual(hex([tree.root()]));
  });
});
