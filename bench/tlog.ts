/**
 * Transparency-log benchmark (`npm run bench:tlog`, or `npx tsx bench/tlog.ts`): appending 10^6
 * leaves to the incremental tree, against hashing the same entries alone in the same run; then,
 * at 10^6 leaves, proof generation and verification latency from an in-memory hash reader, and
 * the signed-note and witness paths. Figures, not tests (see bench/README.md).
 *
 *   BENCH_LEAVES=1000000 (tree size)   BENCH_RUNS=5 (append runs)   BENCH_PROOFS=20000 (proofs per row)
 */
import { hash } from "node:crypto";
import { Buffer } from "node:buffer";
import {
  EMPTY_ROOT,
  MerkleTree,
  addCheckpoint,
  cosignerFromSeed,
  formatHash,
  noteSignerFromSeed,
  openCheckpoint,
  proveConsistency,
  proveConsistencySync,
  proveInclusion,
  proveInclusionSync,
  rootAtSync,
  signCheckpoint,
  verifyConsistency,
  verifyInclusion,
} from "../src/tlog/index.js";
import type { Hash, Result, SyncHashReader } from "../src/tlog/index.js";

const LEAVES = Number(process.env["BENCH_LEAVES"] ?? 1_000_000);
const RUNS = Number(process.env["BENCH_RUNS"] ?? 5);
const PROOFS = Number(process.env["BENCH_PROOFS"] ?? 20_000);

const value = <T>(r: Result<T>): T => {
  if (!r.ok) throw new Error(`${r.error.code}: ${r.error.message}`);
  return r.value;
};
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const quantile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))] as number;
const us = (ms: number) => `${(ms * 1000).toFixed(1)} µs`;
const rate = (n: number, ms: number) => `${Math.round((n / ms) * 1000).toLocaleString("en-US")}/s`;

// A deterministic stream of entries of 100 to 300 bytes, made before any timing.
const entries = Array.from({ length: LEAVES }, (_, i) => Buffer.alloc(100 + (i % 201), i % 251));

// --- appends -------------------------------------------------------------------------------------

console.log(`# Transparency log at ${LEAVES.toLocaleString("en-US")} leaves (median of ${RUNS} runs after a warm-up)\n`);

/**
 * An in-memory store of every node the appends make final: one flat buffer per level, 32 bytes a
 * node, as a store would keep them (2 × 10^6 separate hash objects would measure the garbage
 * collector instead).
 */
class FlatStore {
  readonly levels: Buffer[] = [];
  put(level: number, index: number, h: Hash): void {
    let buf = this.levels[level];
    if (buf === undefined || buf.length < (index + 1) * 32) {
      const grown = Buffer.alloc(Math.max(1024, (index + 1) * 64));
      if (buf !== undefined) buf.copy(grown);
      buf = this.levels[level] = grown;
    }
    buf.set(h, index * 32);
  }
  readonly read: SyncHashReader = (level, index) => this.levels[level]?.subarray(index * 32, index * 32 + 32) as Uint8Array as Hash;
}

const times = { hashed: [] as number[], tree: [] as number[], stored: [] as number[] };
let tree = new MerkleTree();
let store = new FlatStore();
for (let run = 0; run <= RUNS; run++) {
  let t0 = performance.now();
  for (const e of entries) hash("sha256", Buffer.concat([Buffer.from([0]), e]), "buffer");
  const hashed = performance.now() - t0;

  const bare = new MerkleTree();
  t0 = performance.now();
  for (const e of entries) bare.appendData(e);
  const treeOnly = performance.now() - t0;

  store = new FlatStore();
  tree = new MerkleTree();
  t0 = performance.now();
  for (const e of entries) for (const n of tree.appendData(e).nodes) store.put(n.level, n.index, n.hash);
  const stored = performance.now() - t0;
  if (run > 0) {
    times.hashed.push(hashed);
    times.tree.push(treeOnly);
    times.stored.push(stored);
  }
}
const read = store.read;
const root = tree.root();
if (formatHash(value(rootAtSync(LEAVES, read))) !== formatHash(root)) throw new Error("the stored hashes do not give the tree's root");

const ratio = (xs: number[]) => median(xs.map((x, i) => x / (times.hashed[i] as number))).toFixed(2);
console.log("| what | median | per leaf | rate | against hashing the entries alone (same run) |\n| --- | ---: | ---: | ---: | ---: |");
console.log(`| hash each entry (SHA-256(0x00 ‖ entry)): the baseline | ${median(times.hashed).toFixed(0)} ms | ${us(median(times.hashed) / LEAVES)} | ${rate(LEAVES, median(times.hashed))} | 1.00 |`);
console.log(`| append each entry to the tree | ${median(times.tree).toFixed(0)} ms | ${us(median(times.tree) / LEAVES)} | ${rate(LEAVES, median(times.tree))} | ${ratio(times.tree)} |`);
console.log(`| append, and store every node it makes final | ${median(times.stored).toFixed(0)} ms | ${us(median(times.stored) / LEAVES)} | ${rate(LEAVES, median(times.stored))} | ${ratio(times.stored)} |`);

// --- proofs ----------------------------------------------------------------------------------------

let seed = 42;
const random = (n: number) => {
  seed = (seed * 1103515245 + 12345) % 2 ** 31;
  return seed % n;
};
const leaf = (i: number) => read(0, i) as Hash;
const oldRoots = new Map<number, Hash>();
const rootOf = (n: number) => oldRoots.get(n) ?? (oldRoots.set(n, value(rootAtSync(n, read))), oldRoots.get(n) as Hash);

interface Row {
  readonly what: string;
  readonly times: number[];
}
const rows: Row[] = [];
async function measure(what: string, fn: (i: number) => unknown): Promise<void> {
  for (let i = 0; i < 200; i++) await fn(i);
  const times: number[] = [];
  for (let i = 0; i < PROOFS; i++) {
    const t0 = performance.now();
    await fn(i);
    times.push(performance.now() - t0);
  }
  rows.push({ what, times });
}

const indexes = Array.from({ length: PROOFS + 200 }, () => random(LEAVES));
const olds = Array.from({ length: PROOFS + 200 }, () => 1 + random(LEAVES - 1));
const inclusion = indexes.map((m) => value(proveInclusionSync(m, LEAVES, read)));
const consistency = olds.map((m) => value(proveConsistencySync(m, LEAVES, read)));
for (const m of olds) rootOf(m);

await measure("inclusion proof, synchronous reader", (i) => proveInclusionSync(indexes[i] as number, LEAVES, read));
await measure("inclusion proof, asynchronous reader", (i) => proveInclusion(indexes[i] as number, LEAVES, async (l, j) => read(l, j)));
await measure("verify an inclusion proof", (i) => value(verifyInclusion(leaf(indexes[i] as number), indexes[i] as number, LEAVES, inclusion[i] as Hash[], root)));
await measure("consistency proof, synchronous reader", (i) => proveConsistencySync(olds[i] as number, LEAVES, read));
await measure("consistency proof, asynchronous reader", (i) => proveConsistency(olds[i] as number, LEAVES, async (l, j) => read(l, j)));
await measure("verify a consistency proof", (i) => value(verifyConsistency(olds[i] as number, LEAVES, rootOf(olds[i] as number), root, consistency[i] as Hash[])));
await measure("root at an earlier size, from stored hashes", (i) => rootAtSync(olds[i] as number, read));

// --- notes and the witness ---------------------------------------------------------------------

const log = value(noteSignerFromSeed("example.com/log", new Uint8Array(32).fill(1)));
const witness = value(cosignerFromSeed("example.com/witness", new Uint8Array(32).fill(2)));
const checkpoint = value(signCheckpoint({ origin: log.name, size: LEAVES, root, extensions: [] }, [log]));
await measure("sign a checkpoint (Ed25519)", () => signCheckpoint({ origin: log.name, size: LEAVES, root, extensions: [] }, [log]));
await measure("open a signed checkpoint", () => value(openCheckpoint(checkpoint, [log.verifier])));
const bodies = olds.map((m, i) => Buffer.from(`old ${m}\n${(consistency[i] as Hash[]).map((h) => `${formatHash(h)}\n`).join("")}\n${checkpoint}`));
await measure("witness add-checkpoint: parse, open, verify the proof, cosign", (i) => {
  const m = olds[i] as number;
  const answer = addCheckpoint(bodies[i] as Buffer, () => ({ origin: log.name, verifiers: [log.verifier], size: m, root: rootOf(m) }), { cosigners: [witness], now: 1_700_000_000 });
  if (answer.status !== 200) throw new Error(`witness answered ${answer.status}: ${answer.body}`);
});

console.log(`\n| at ${LEAVES.toLocaleString("en-US")} leaves (${PROOFS.toLocaleString("en-US")} calls each, random sizes and leaves) | median | 99th percentile |\n| --- | ---: | ---: |`);
for (const r of rows) console.log(`| ${r.what} | ${us(median(r.times))} | ${us(quantile(r.times, 0.99))} |`);
const avg = (xs: Hash[][]) => (xs.reduce((a, p) => a + p.length, 0) / xs.length).toFixed(1);
console.log(`\nProof lengths: inclusion ${avg(inclusion)} hashes on average, consistency ${avg(consistency)}; the empty tree's root is ${formatHash(EMPTY_ROOT)}.`);
