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

/** Rows' entries as a store hands them over: each row's bytes after a 0x00, and where each ends. */
function entriesOf(rows: readonly string[]): { entries: Buffer; ends: Uint32Array } {
  const parts = rows.map((r) => Buffer.concat([Buffer.of(0), Buffer.from(r, "utf8")]));
  let end = 0;
  return { entries: Buffer.concat(parts), ends: Uint32Array.from(parts.map((p) => (end += p.length))) };
}

const rowText = (seq: number): string => `["prev",${seq},"stream"]\n{"n":${seq},"pad":"${"é".repeat(seq % 7)}"}`;
/** A stand-in for row `seq`'s chain hash (the feed only keeps it and hands it back). */
const chainOfRow = (seq: number): string => createHash("sha256").update(`chain ${seq}`).digest("hex");
const leafOfRow = (seq: number): string => createHash("sha256").update(Buffer.of(0)).update(rowText(seq), "utf8").digest("hex");

/** A tree of `size` leaves over rows 1..size, as the reference computes it. */
function referenceTree(size: number): MerkleTree {
  const t = new MerkleTree();
  for (let seq = 1; seq <= size; seq++) t.append(Buffer.from(leafOfRow(seq), "hex") as unknown as Hash);
  return t;
}

describe("a tree's feed of leaves from its own appends", () => {
  /** Appends rows (from, to] to the feed in batches of `per`. */
  const feedRows = (feed: ReturnType<typeof treeHasher.feed>, from: number, to: number, per: number): void => {
    for (let seq = from + 1; seq <= to; seq += per) {
      const rows = Array.from({ length: Math.min(per, to - seq + 1) }, (_, i) => rowText(seq + i));
      const { entries, ends } = entriesOf(rows);
      feed.take(seq, entries, ends, Buffer.from(rows.map((_, i) => chainOfRow(seq + i)).join(""), "hex"));
    }
  };

  it.each([
    { name: "a few rows, hashed in place", rows: 40, per: 7, catchUps: [10, 40], onThread: false },
    { name: "many rows, hashed on the thread", rows: 9_000, per: 100, catchUps: [4_000, 9_000], onThread: true },
    { name: "rows hashed in place, then handed to the thread with many more", rows: 5_000, per: 3, catchUps: [5_000], onThread: true },
  ])("gives the leaves of its rows and the tree they extend: $name", async ({ rows, per, catchUps, onThread }) => {
    const answered = treeHasher.answered;
    const feed = treeHasher.feed();
    feedRows(feed, 0, rows, per);
    let size = 0;
    let edge: Hash[] = [];
    for (const upTo of catchUps) {
      const got = await feed.extend(size, edge, upTo);
      expect(got, `leaves (${size}, ${upTo}]`).not.toBeNull();
      const leaves = got?.leaves ?? new Uint8Array();
      expect(Buffer.from(leaves).toString("hex")).toBe(Array.from({ length: upTo - size }, (_, i) => leafOfRow(size + i + 1)).join(""));
      const ref = referenceTree(upTo);
      expect(hex(got?.extended.edge ?? [])).toEqual(hex(ref.edge().map((n) => n.hash)));
      expect(got?.last, `the chain hash of row ${upTo}`).toBe(chainOfRow(upTo));
      edge = got?.extended.edge ?? [];
      size = upTo;
    }
    expect(treeHasher.answered > answered).toBe(onThread);
  });

  it("answers null for rows it does not hold: before its first, past its last, after a gap", async () => {
    const feed = treeHasher.feed();
    feedRows(feed, 10, 20, 5);
    expect(await feed.extend(0, [], 20)).toBeNull();
    expect(await feed.extend(10, referenceTree(10).edge().map((n) => n.hash), 21)).toBeNull();
    // Rows 31.. after a gap (another process appended 21..30): the feed starts over from 31.
    feedRows(feed, 30, 40, 5);
    expect(feed.first).toBe(31);
    expect(await feed.extend(20, referenceTree(20).edge().map((n) => n.hash), 40)).toBeNull();
    const got = await feed.extend(30, referenceTree(30).edge().map((n) => n.hash), 40);
    expect(hex(got?.extended.edge ?? [])).toEqual(hex(referenceTree(40).edge().map((n) => n.hash)));
  });

  it("forgets the rows before the size the tree asks from: they are in the stored tree", async () => {
    const feed = treeHasher.feed();
    feedRows(feed, 0, 5_000, 500);
    const first = await feed.extend(0, [], 4_500);
    const second = await feed.extend(4_500, first?.extended.edge ?? [], 5_000);
    expect(hex(second?.extended.edge ?? [])).toEqual(hex(referenceTree(5_000).edge().map((n) => n.hash)));
    expect(feed.first).toBe(4_501);
    expect(await feed.extend(0, [], 10)).toBeNull();
  });

  it("lets the tree read rows back once the thread dropped a feed it had not used for long", async () => {
    const first = treeHasher.feed();
    feedRows(first, 0, 5_000, 1_000);
    // More feeds on the thread than it keeps: the oldest is dropped there.
    const others = Array.from({ length: 9 }, () => treeHasher.feed());
    for (const f of others) feedRows(f, 0, 5_000, 1_000);
    expect(await first.extend(0, [], 5_000)).toBeNull();
    expect(await others[8]?.extend(0, [], 5_000)).not.toBeNull();
  });
});
