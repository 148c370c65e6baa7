import { readFileSync } from "node:fs";
import { Buffer } from "node:buffer";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { bitLength, popcount } from "./bits.js";
import { EMPTY_ROOT, hashFromBytes, leafHash, nodeHash, parseHash } from "./hash.js";
import type { Hash } from "./hash.js";
import { fail, TlogErrorCode } from "./errors.js";
import type { Result } from "./errors.js";
import { foldRange, rightEdge } from "./tree.js";
import {
  planConsistency,
  planInclusion,
  planRoot,
  proveConsistency,
  proveConsistencySync,
  proveInclusion,
  proveInclusionSync,
  rootAt,
  rootAtSync,
  verifyConsistency,
  verifyInclusion,
} from "./proof.js";
import type { SyncHashReader } from "./proof.js";
import { storedTree, toHex, value } from "./test-support.js";

const testdata = (name: string): unknown => JSON.parse(readFileSync(new URL(`./testdata/${name}`, import.meta.url), "utf8"));

/** MTH(D[n]) by RFC 9162 §2.1.1, written again here so the tree is checked against something else. */
function mth(d: readonly Hash[]): Hash {
  if (d.length === 0) return EMPTY_ROOT;
  if (d.length === 1) return d[0] as Hash;
  let k = 1;
  while (k * 2 < d.length) k *= 2;
  return nodeHash(mth(d.slice(0, k)), mth(d.slice(k)));
}
const split = (n: number) => {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
};
/** PATH(m, D[n]) of RFC 9162 §2.1.3.1. */
function path(m: number, d: readonly Hash[]): Hash[] {
  if (d.length <= 1) return [];
  const k = split(d.length);
  return m < k ? [...path(m, d.slice(0, k)), mth(d.slice(k))] : [...path(m - k, d.slice(k)), mth(d.slice(0, k))];
}
/** SUBPROOF(m, D[n], b) of RFC 9162 §2.1.4.1. */
function subproof(m: number, d: readonly Hash[], b: boolean): Hash[] {
  if (m === d.length) return b ? [] : [mth(d)];
  const k = split(d.length);
  return m <= k ? [...subproof(m, d.slice(0, k), b), mth(d.slice(k))] : [...subproof(m - k, d.slice(k), false), mth(d.slice(0, k))];
}

const flipped = (proof: readonly Hash[], i: number): Hash[] => proof.map((h, j) => (j === i ? (Uint8Array.from(h, (b, x) => (x === 0 ? b ^ 1 : b)) as Hash) : h));
const hexes = (hs: readonly Hash[]) => hs.map(toHex);

describe("inclusion and consistency proofs against RFC 9162's definitions, every size up to 70", () => {
  const N = 70;
  const { leaves, read } = storedTree(N);

  it("builds PATH(m, D[n]) for every leaf of every tree, verifies it, and refuses it with any hash changed", () => {
    for (let n = 1; n <= N; n++) {
      const d = leaves.slice(0, n);
      const root = mth(d);
      for (let m = 0; m < n; m++) {
        const proof = value(proveInclusionSync(m, n, read));
        expect(hexes(proof)).toEqual(hexes(path(m, d)));
        expect(verifyInclusion(d[m] as Hash, m, n, proof, root).ok).toBe(true);
        for (let i = 0; i < proof.length; i++) expect(verifyInclusion(d[m] as Hash, m, n, flipped(proof, i), root).ok).toBe(false);
        if (n > 1) expect(verifyInclusion(d[m] as Hash, (m + 1) % n, n, proof, root).ok).toBe(false);
        expect(verifyInclusion(d[m] as Hash, m, n, proof.slice(0, -1), root).ok).toBe(n === 1);
        expect(verifyInclusion(d[m] as Hash, m, n, [...proof, root], root).ok).toBe(false);
      }
    }
  });

  it("builds PROOF(m, D[n]) for every pair of sizes, verifies it, and refuses it with any hash changed", () => {
    for (let n = 1; n <= N; n++) {
      const d = leaves.slice(0, n);
      const newRoot = mth(d);
      for (let m = 1; m <= n; m++) {
        const oldRoot = mth(d.slice(0, m));
        const proof = value(proveConsistencySync(m, n, read));
        expect(hexes(proof)).toEqual(m === n ? [] : hexes(subproof(m, d, true)));
        expect(verifyConsistency(m, n, oldRoot, newRoot, proof).ok).toBe(true);
        for (let i = 0; i < proof.length; i++) expect(verifyConsistency(m, n, oldRoot, newRoot, flipped(proof, i)).ok).toBe(false);
        if (m < n) {
          expect(verifyConsistency(m, n, newRoot, oldRoot, proof).ok).toBe(false);
          expect(verifyConsistency(m, n, oldRoot, newRoot, proof.slice(1)).ok).toBe(false);
          expect(verifyConsistency(m, n, oldRoot, newRoot, [...proof, newRoot]).ok).toBe(false);
          if (m > 1) expect(verifyConsistency(m - 1, n, oldRoot, newRoot, proof).ok).toBe(false);
        }
      }
    }
  });

  it("gives the root at every earlier size from stored hashes", () => {
    for (let n = 0; n <= N; n++) expect(toHex(value(rootAtSync(n, read)))).toBe(toHex(mth(leaves.slice(0, n))));
  });
});

describe("published proofs", () => {
  // Proof generation vectors of github.com/transparency-dev/merkle cmd/proofgen/main.go at commit
  // 417fb0c314750d94e53942e9f92e79b6d35915db (its leaf numbers are 1-based), over the RFC 6962 test
  // tree of testonly/constants.go.
  const rfcTree = () => {
    const inputs = ["", "00", "10", "2021", "3031", "40414243", "5051525354555657", "606162636465666768696a6b6c6d6e6f"];
    const nodes = new Map<string, Hash>();
    let size = 0;
    const leaves = inputs.map((i) => leafHash(Buffer.from(i, "hex")));
    for (const h of leaves) {
      nodes.set(`0/${size}`, h);
      for (let level = 1, n = size; n % 2 === 1; level++, n = (n - 1) / 2) {
        nodes.set(`${level}/${size >> level}`, nodeHash(nodes.get(`${level - 1}/${(size >> level) * 2}`) as Hash, nodes.get(`${level - 1}/${(size >> level) * 2 + 1}`) as Hash));
      }
      size++;
    }
    const read: SyncHashReader = (level, index) => nodes.get(`${level}/${index}`) as Hash;
    return { read };
  };

  it.each([
    [0, 1, []],
    [0, 8, ["96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7", "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e", "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"]],
    [5, 8, ["bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b", "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0", "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"]],
    [2, 3, ["fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125"]],
    [1, 5, ["6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d", "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e", "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"]],
  ])("makes the published inclusion proof of leaf %d in the tree of %d leaves", async (index, size, want) => {
    expect(hexes(value(await proveInclusion(index, size, rfcTree().read)))).toEqual(want);
  });

  it.each([
    [1, 1, []],
    [1, 8, ["96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7", "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e", "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"]],
    [6, 8, ["0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a", "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0", "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"]],
    [2, 5, ["5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e", "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"]],
    [6, 7, ["0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a", "b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f", "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"]],
  ])("makes the published consistency proof from %d to %d leaves", async (m, n, want) => {
    expect(hexes(value(await proveConsistency(m, n, rfcTree().read)))).toEqual(want);
  });

  interface Probe {
    readonly path: string;
    readonly probe: Record<string, unknown> & { readonly desc: string; readonly wantErr: boolean; readonly proof: string[] | null };
  }
  const probes = testdata("merkle-probes.json") as { inclusion: Probe[]; consistency: Probe[] };
  /** A probe's base64 value as a hash; a value that is not 32 bytes cannot be one, so the probe is refused before it is verified. */
  const asHash = (s: unknown): Result<Hash> => hashFromBytes(Buffer.from(String(s), "base64"));
  const all = (xs: readonly Result<Hash>[]): Result<Hash[]> => {
    const out: Hash[] = [];
    for (const x of xs) {
      if (!x.ok) return x;
      out.push(x.value);
    }
    return { ok: true, value: out };
  };
  const asIndex = (n: unknown) => (Number.isSafeInteger(n) ? (n as number) : -1);
  // The one probe whose roots are 12 bytes ("don't care 2") yet expected to verify: equal sizes and
  // equal roots. This room takes only 32-byte hashes, so it refuses the probe before comparing them.
  const REFUSED_FOR_HASH_LENGTH = new Set(["testdata/consistency/additional/sizes-are-equal-one-and-proof-is-empty.json"]);

  it.each(probes.inclusion.map((p) => [p.path, p] as const))("verifies the inclusion probe %s as published", (_path, { probe }) => {
    const got = ((): Result<undefined> => {
      const hs = all([asHash(probe["leafHash"]), asHash(probe["root"]), ...(probe.proof ?? []).map(asHash)]);
      if (!hs.ok) return hs;
      const [leaf, root, ...proof] = hs.value as [Hash, Hash, ...Hash[]];
      return verifyInclusion(leaf, asIndex(probe["leafIdx"]), asIndex(probe["treeSize"]), proof, root);
    })();
    expect(got.ok).toBe(!probe.wantErr);
  });

  it.each(probes.consistency.map((p) => [p.path, p] as const))("verifies the consistency probe %s as published", (path, { probe }) => {
    const got = ((): Result<undefined> => {
      const hs = all([asHash(probe["root1"]), asHash(probe["root2"]), ...(probe.proof ?? []).map(asHash)]);
      if (!hs.ok) return hs;
      const [r1, r2, ...proof] = hs.value as [Hash, Hash, ...Hash[]];
      return verifyConsistency(asIndex(probe["size1"]), asIndex(probe["size2"]), r1, r2, proof);
    })();
    expect(got.ok).toBe(!probe.wantErr && !REFUSED_FOR_HASH_LENGTH.has(path));
  });

  it("verifies a Certificate Transparency log's real proofs: leaf 10000 of 961,984,011 and consistency from 3,654,490", () => {
    const ct = testdata("ct-argon2020.json") as Record<string, Record<string, unknown>> & { oldRoot3654490: string };
    const sth = ct["get-sth"] as { tree_size: number; sha256_root_hash: string };
    const root = value(parseHash(sth.sha256_root_hash));
    const entry = (ct["get-entries-start-10000-end-10000"] as { entries: { leaf_input: string }[] }).entries[0] as { leaf_input: string };
    const leaf = leafHash(Buffer.from(entry.leaf_input, "base64"));
    const auditPath = (ct["get-proof-by-hash-tree-size-961984011-hash-nCs3mfIydh9x4CKyQ-2Bu2xtmpxmFggA5MLymHwNQSlLg-3D"] as { audit_path: string[] }).audit_path.map((s) => value(parseHash(s)));
    const consistency = (ct["get-sth-consistency-first-3654490-second-961984011"] as { consistency: string[] }).consistency.map((s) => value(parseHash(s)));
    const oldRoot = value(parseHash(ct.oldRoot3654490));

    expect(sth.tree_size).toBe(961_984_011);
    expect(verifyInclusion(leaf, 10_000, sth.tree_size, auditPath, root).ok).toBe(true);
    expect(verifyInclusion(leaf, 10_001, sth.tree_size, auditPath, root).ok).toBe(false);
    expect(verifyInclusion(leaf, 10_000, sth.tree_size, flipped(auditPath, 29), root).ok).toBe(false);
    expect(verifyConsistency(3_654_490, sth.tree_size, oldRoot, root, consistency).ok).toBe(true);
    expect(verifyConsistency(3_654_490, sth.tree_size, oldRoot, root, flipped(consistency, 0)).ok).toBe(false);
    expect(verifyConsistency(3_654_491, sth.tree_size, oldRoot, root, consistency).ok).toBe(false);
  });
});

describe("proofs over random trees (property)", () => {
  const N = 3000;
  const { leaves, read } = storedTree(N);
  const roots = [EMPTY_ROOT];
  for (let n = 1; n <= N; n++) roots.push(foldRange(rightEdge(n).map((id) => read(id.level, id.index) as Hash)));

  it("proves and verifies the inclusion of any leaf in any tree, reading O(log n) stored hashes", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: N }).chain((n) => fc.tuple(fc.constant(n), fc.integer({ min: 0, max: n - 1 }))),
        async ([n, m]) => {
          expect(value(planInclusion(m, n)).nodes.length).toBeLessThanOrEqual(2 * bitLength(n));
          const proof = value(await proveInclusion(m, n, async (l, i) => read(l, i)));
          expect(verifyInclusion(leaves[m] as Hash, m, n, proof, roots[n] as Hash).ok).toBe(true);
          if (proof.length > 0) expect(verifyInclusion(leaves[m] as Hash, m, n, flipped(proof, proof.length - 1), roots[n] as Hash).ok).toBe(false);
        },
      ),
      { numRuns: 300 },
    );
  });

  it("proves and verifies the consistency of any two trees, reading O(log n) stored hashes", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: N }).chain((n) => fc.tuple(fc.integer({ min: 1, max: n }), fc.constant(n))),
        async ([m, n]) => {
          expect(value(planConsistency(m, n)).nodes.length).toBeLessThanOrEqual(2 * bitLength(n) + 1);
          const proof = value(await proveConsistency(m, n, read));
          expect(verifyConsistency(m, n, roots[m] as Hash, roots[n] as Hash, proof).ok).toBe(true);
          if (proof.length > 0) expect(verifyConsistency(m, n, roots[m] as Hash, roots[n] as Hash, flipped(proof, 0)).ok).toBe(false);
        },
      ),
      { numRuns: 300 },
    );
  });

  it("proves and verifies at sizes up to 2^53 - 1, in a tree whose leaves are all the same", () => {
    // With one leaf everywhere, every node of a level has the same hash: any size is cheap to build.
    const level = [leafHash(Buffer.from("same"))];
    for (let l = 1; l <= 53; l++) level.push(nodeHash(level[l - 1] as Hash, level[l - 1] as Hash));
    const read: SyncHashReader = (l) => level[l] as Hash;
    const root = (n: number) => value(rootAtSync(n, read));
    fc.assert(
      fc.property(fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }), fc.double({ min: 0, max: 1, noNaN: true }), (n, f) => {
        const m = Math.min(n - 1, Math.floor(f * n));
        const incl = value(proveInclusionSync(m, n, read));
        expect(verifyInclusion(level[0] as Hash, m, n, incl, root(n)).ok).toBe(true);
        if (incl.length > 0) expect(verifyInclusion(level[0] as Hash, m, n, incl.slice(1), root(n)).ok).toBe(false);
        const old = Math.max(1, m);
        const cons = value(proveConsistencySync(old, n, read));
        expect(verifyConsistency(old, n, root(old), root(n), cons).ok).toBe(true);
        expect(rightEdge(n)).toHaveLength(popcount(n));
      }),
      { numRuns: 500 },
    );
  });
});

describe("arguments and readers", () => {
  const { read } = storedTree(8);

  it.each([
    ["an index past the tree", () => planInclusion(8, 8), "index"],
    ["a negative index", () => planInclusion(-1, 8), "index"],
    ["a fractional size", () => planInclusion(0, 8.5), "size"],
    ["a size past 2^53 - 1", () => planRoot(2 ** 53), "size"],
    ["a consistency proof from the empty tree", () => planConsistency(0, 8), "oldSize"],
    ["a consistency proof from a larger tree", () => planConsistency(9, 8), "oldSize"],
  ])("refuses %s", (_what, plan, path) => {
    const r = plan();
    expect(r.ok ? null : r.error).toMatchObject({ code: TlogErrorCode.InvalidArgument, path });
  });

  it("refuses to verify a consistency proof from the empty tree, as RFC 9162 defines none", () => {
    const r = verifyConsistency(0, 0, EMPTY_ROOT, EMPTY_ROOT, []);
    expect(r.ok ? null : r.error.code).toBe(TlogErrorCode.InvalidArgument);
  });

  it("reports a reader's answer that is not a hash, and passes on a reader's own failure", async () => {
    const short: SyncHashReader = () => new Uint8Array(31) as Hash;
    expect(proveInclusionSync(3, 8, short)).toMatchObject({ ok: false, error: { code: TlogErrorCode.ReadFailed } });
    const refusing = async () => fail(TlogErrorCode.ReadFailed, "tile/0/000", "no such tile");
    expect(await proveConsistency(3, 8, refusing)).toMatchObject({ ok: false, error: { path: "tile/0/000" } });
    expect(await rootAt(8, refusing)).toMatchObject({ ok: false });
    expect(toHex(value(await rootAt(0, refusing)))).toBe(toHex(EMPTY_ROOT));
  });

  it("reads each node once for a proof", async () => {
    const asked: string[] = [];
    await proveInclusion(5, 8, (l, i) => {
      asked.push(`${l}/${i}`);
      return read(l, i);
    });
    expect(asked).toEqual(["0/4", "1/3", "2/0"]);
  });
});
