import { Buffer } from "node:buffer";
import { describe, expect, it } from "vitest";
import { EMPTY_ROOT, leafHash } from "./hash.js";
import type { Hash } from "./hash.js";
import { MerkleTree, recursiveRoot, rightEdge, rootOf } from "./tree.js";
import { TlogErrorCode } from "./errors.js";
import { storedTree, toHex, value } from "./test-support.js";

// The RFC 6962 test tree of github.com/transparency-dev/merkle testonly/constants.go at commit
// 417fb0c314750d94e53942e9f92e79b6d35915db: its eight leaf inputs, every node hash by level, and
// the root at every size.
const LEAF_INPUTS = ["", "00", "10", "2021", "3031", "40414243", "5051525354555657", "606162636465666768696a6b6c6d6e6f"];
const NODE_HASHES = [
  [
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
    "0298d122906dcfc10892cb53a73992fc5b9f493ea4c9badb27b791b4127a7fe7",
    "07506a85fd9dd2f120eb694f86011e5bb4662e5c415a62917033d4a9624487e7",
    "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
    "4271a26be0d8a84f0bd54c8c302e7cb3a3b5d1fa6780a40bcce2873477dab658",
    "b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f",
    "46f6ffadd3d06a09ff3c5860d2755c8b9819db7df44251788c7d8e3180de8eb1",
  ],
  [
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
    "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
    "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
  ],
  ["d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7", "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"],
  ["5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328"],
];
const ROOTS = [
  "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
  "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
  "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
  "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
  "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
  "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
  "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
  "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
  "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
];
// CompactTrees() of the same file: the right edge at each size, as (level, index) into NODE_HASHES.
const EDGES: [number, number][][] = [[], [[0, 0]], [[1, 0]], [[1, 0], [0, 2]], [[2, 0]], [[2, 0], [0, 4]], [[2, 0], [1, 2]], [[2, 0], [1, 2], [0, 6]], [[3, 0]]];

const rfcTree = () => {
  const tree = new MerkleTree();
  const reported = new Map<string, string>();
  const roots = [toHex(tree.root())];
  const edges = [tree.edge()];
  for (const input of LEAF_INPUTS) {
    for (const n of tree.appendData(Buffer.from(input, "hex")).nodes) reported.set(`${n.level}/${n.index}`, toHex(n.hash));
    roots.push(toHex(tree.root()));
    edges.push(tree.edge());
  }
  return { reported, roots, edges };
};

describe("the incremental Merkle tree", () => {
  it("has the published root at every size of the RFC 6962 test tree", () => {
    expect(rfcTree().roots).toEqual(ROOTS);
  });

  it("reports every node of the RFC 6962 test tree, with its published hash, as it becomes final", () => {
    const want = new Map(NODE_HASHES.flatMap((row, level) => row.map((h, index) => [`${level}/${index}`, h] as const)));
    expect(rfcTree().reported).toEqual(want);
  });

  it("holds the published right edge (compact range) at every size", () => {
    const { edges } = rfcTree();
    edges.forEach((edge, size) => {
      expect(edge.map((n) => [n.level, n.index])).toEqual(EDGES[size]);
      expect(edge.map((n) => toHex(n.hash))).toEqual((EDGES[size] ?? []).map(([l, i]) => NODE_HASHES[l]?.[i]));
    });
  });

  it("reports 1 + the trailing ones of the index as final nodes on each append", () => {
    const tree = new MerkleTree();
    const counts = Array.from({ length: 16 }, (_, i) => tree.appendData(Buffer.from([i])).nodes.length);
    expect(counts).toEqual([1, 2, 1, 3, 1, 2, 1, 4, 1, 2, 1, 3, 1, 2, 1, 5]);
  });

  it("gives the root of RFC 9162's recursive definition at every size up to 300", () => {
    const leaves: Hash[] = [];
    const tree = new MerkleTree();
    for (let size = 0; size <= 300; size++) {
      expect(toHex(tree.root())).toBe(toHex(recursiveRoot(leaves)));
      const h = leafHash(Buffer.from(`entry ${size}`));
      leaves.push(h);
      tree.append(h);
    }
    expect(toHex(rootOf(leaves))).toBe(toHex(recursiveRoot(leaves)));
    expect(toHex(rootOf([]))).toBe(toHex(EMPTY_ROOT));
  });

  it("resumes from a stored right edge and goes on to the same roots", () => {
    const { tree } = storedTree(1000);
    for (const at of [0, 1, 7, 255, 256, 777]) {
      const { tree: before } = storedTree(at);
      const resumed = value(MerkleTree.resume(at, before.edge().map((n) => n.hash)));
      for (let i = at; i < 1000; i++) resumed.appendData(Buffer.from(`leaf ${i}`));
      expect(toHex(resumed.root())).toBe(toHex(tree.root()));
    }
  });

  it.each([
    [5, 1, "a tree of 5 leaves has 2 right-edge hashes, not 1"],
    [-1, 0, "a tree size is an integer from 0 to 2^53 - 1"],
    [2.5, 0, "a tree size is an integer from 0 to 2^53 - 1"],
  ])("refuses to resume at size %d from %d hashes", (size, count, message) => {
    const r = MerkleTree.resume(size, Array.from({ length: count }, () => EMPTY_ROOT));
    expect(r.ok ? null : r.error).toMatchObject({ code: TlogErrorCode.InvalidArgument, message });
  });

  it("names the right edge's nodes for any size", () => {
    expect(rightEdge(13)).toEqual([
      { level: 3, index: 0 },
      { level: 2, index: 2 },
      { level: 0, index: 12 },
    ]);
    expect(rightEdge(2 ** 53 - 1)).toHaveLength(53);
    expect(rightEdge(2 ** 52)).toEqual([{ level: 52, index: 0 }]);
  });

  it("reports tile hashes as they become final: levels 0, 8 and 16, each tile completed by its 256th hash", () => {
    const tree = new MerkleTree();
    const byLevel = [0, 0, 0];
    const completed: string[] = [];
    for (let i = 0; i < 70_000; i++) {
      for (const e of tree.appendData(Buffer.from(String(i))).tileEntries) {
        byLevel[e.tile.level] = (byLevel[e.tile.level] ?? 0) + 1;
        expect(e.position).toBe(((byLevel[e.tile.level] as number) - 1) % 256);
        if (e.completesTile) completed.push(`${e.tile.level}/${e.tile.index}`);
      }
    }
    // 70,000 leaves: 273 full level-0 tiles + 112, 273 level-1 hashes (one full tile + 17), 1 level-2 hash.
    expect(byLevel).toEqual([70_000, 273, 1]);
    expect(completed.filter((t) => t.startsWith("0/"))).toHaveLength(273);
    expect(completed.filter((t) => t.startsWith("1/"))).toEqual(["1/0"]);
  });
});
