/**
 * The Merkle tree over the log (docs/adr/0141), part of `npm run bench:store` (or alone with
 * BENCH_ONLY=tree): append with checkpoints signed every second against append without, an
 * inclusion proof read from the stored tiles at 10^6 events, and the time from an append to the
 * first signed checkpoint that covers it, and a witness's verifications per second. SQLite, the
 * embedded default.
 *
 *   BENCH_TREE_EVENTS=1000000 (the log the proofs are read from)   BENCH_RUNS=5
 *   BENCH_TREE_PARTS=append,covering,proofs,witness (which figures; all by default)
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openStore } from "../src/events/store.js";
import { CheckpointSchedule } from "../src/events/tree-checkpoints.js";
import type { EventLog } from "../src/events/port.js";
import { addCheckpoint, cosignerFromSeed, EMPTY_ROOT, noteSignerFromSeed, proveInclusion, verifyInclusion } from "../src/tlog/index.js";
import type { Hash, WitnessedLog } from "../src/tlog/index.js";
import { FakeLog, must } from "../src/witness/test-support.js";
import { Workload } from "./workload.js";

const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const BIG = Number(process.env.BENCH_TREE_EVENTS ?? 1_000_000);
const dir = mkdtempSync(join(tmpdir(), "openfief-bench-tree-"));
const signer = (() => {
  const s = noteSignerFromSeed("bench.example/log", new Uint8Array(32).fill(3));
  if (!s.ok) throw new Error(s.error.message);
  return s.value;
})();

const fmt = (n: number, d = 0): string => n.toLocaleString("en-US", { maximumFractionDigits: d, minimumFractionDigits: d });
const sorted = (xs: readonly number[]): number[] => [...xs].sort((a, b) => a - b);
const pct = (xs: readonly number[], p: number): number => sorted(xs)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))] as number;
const now = (): number => Number(process.hrtime.bigint()) / 1e6;
let n = 0;
const fresh = (): Promise<EventLog> => openStore({ file: join(dir, `log${++n}.db`) });

/** CPU ms of this process's main thread (Linux: /proc, in 10 ms ticks); NaN elsewhere. */
function appendingThreadCpuMs(): number {
  try {
    const fields = readFileSync(`/proc/self/task/${process.pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return Number.NaN;
  }
}

/** Events per second of `events` appended in batches of `per`, with or without the checkpoints' schedule running. */
async function appendRate(events: number, per: number, signing: boolean): Promise<{ rate: number; cpuRate: number; busyRate: number; checkpoints: number }> {
  const log = await fresh();
  const workload = new Workload(1000);
  const batches = workload.batches(0, events, per);
  let checkpoints = 0;
  const schedule = signing ? new CheckpointSchedule(log, signer, { every: 100_000_000, intervalMs: 1_000, onCheckpoint: () => { checkpoints++; } }) : null;
  const t0 = now();
  const c0 = process.cpuUsage();
  const m0 = appendingThreadCpuMs();
  for (const b of batches) {
    await log.append(b);
    // Let timers run between appends, as a server's appends leave room for them.
    if (signing) await new Promise((r) => setImmediate(r));
  }
  const ms = now() - t0;
  const c = process.cpuUsage(c0);
  // The appending thread's own CPU time (the tree's hashing thread is not in it).
  const busy = appendingThreadCpuMs() - m0;
  await schedule?.stop();
  await log.close();
  const count = batches.reduce((s, b) => s + b.length, 0);
  return { rate: (count * 1000) / ms, cpuRate: count / ((c.user + c.system) / 1e6), busyRate: (count * 1000) / busy, checkpoints };
}

async function appendWithCheckpoints(): Promise<void> {
  const events = 200_000;
  console.log(`\nAppend with a checkpoint signed every second against without (${fmt(events)} events in batches of 100, median of ${RUNS} runs; the tree caught up and its tiles written at each checkpoint)`);
  console.log("| mode | events/s (wall) | events per CPU-second (all threads) | events per CPU-second of the appending thread | checkpoints signed |");
  console.log("| --- | ---: | ---: | ---: | ---: |");
  const without: number[] = [];
  const withCp: number[] = [];
  const withoutCpu: number[] = [];
  const withCpu: number[] = [];
  const cps: number[] = [];
  const withoutBusy: number[] = [];
  const withBusy: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const a = await appendRate(events, 100, false);
    without.push(a.rate);
    withoutCpu.push(a.cpuRate);
    withoutBusy.push(a.busyRate);
    const r = await appendRate(events, 100, true);
    withCp.push(r.rate);
    withCpu.push(r.cpuRate);
    withBusy.push(r.busyRate);
    cps.push(r.checkpoints);
  }
  const a = pct(without, 50);
  const b = pct(withCp, 50);
  console.log(`| without checkpoints | ${fmt(a)} | ${fmt(pct(withoutCpu, 50))} | ${fmt(pct(withoutBusy, 50))} | 0 |`);
  console.log(`| checkpoints every 1 s | ${fmt(b)} | ${fmt(pct(withCpu, 50))} | ${fmt(pct(withBusy, 50))} | ${fmt(pct(cps, 50))} |`);
  console.log(`appending thread's CPU: **${fmt((100 * pct(withBusy, 50)) / pct(withoutBusy, 50), 1)} %**; runs: ${withoutBusy.map((x, i) => fmt((100 * (withBusy[i] as number)) / x, 1)).join(", ")} %`);
  console.log(`with / without: **${fmt((100 * b) / a, 1)} %** wall, **${fmt((100 * pct(withCpu, 50)) / pct(withoutCpu, 50), 1)} %** per CPU-second (target ≥ 90 %); runs (wall): ${without.map((x, i) => fmt((100 * (withCp[i] as number)) / x, 1)).join(", ")} %; runs (CPU): ${withoutCpu.map((x, i) => fmt((100 * (withCpu[i] as number)) / x, 1)).join(", ")} %`);
}

async function proofs(): Promise<void> {
  const log = await fresh();
  const workload = new Workload(1000);
  const t0 = now();
  for (const b of workload.batches(0, BIG, 1000)) await log.append(b);
  const appendS = (now() - t0) / 1000;
  const t1 = now();
  const size = await log.tree.catchUp();
  const treeS = (now() - t1) / 1000;
  const root = await log.tree.root();
  const leafOf = async (i: number): Promise<Hash> => {
    const h = await log.tree.hashes(0, i);
    if (h instanceof Uint8Array) return h;
    if (!h.ok) throw new Error(h.error.message);
    return h.value;
  };
  const times = async (k: number): Promise<number[]> => {
    const out: number[] = [];
    for (let j = 0; j < k; j++) {
      const i = Math.floor(Math.random() * size);
      const s = now();
      const p = await proveInclusion(i, size, log.tree.hashes);
      out.push(now() - s);
      if (!p.ok || !verifyInclusion(await leafOf(i), i, size, p.value, root).ok) throw new Error(`the proof of ${i} does not verify`);
    }
    return out;
  };
  const cold = await times(1000);
  const warm = await times(1000);
  console.log(`\nInclusion proofs from the stored tiles at ${fmt(size)} events (the log appended in ${fmt(appendS, 1)} s; the tree caught up from nothing in ${fmt(treeS, 1)} s = ${fmt(size / treeS)} leaves/s)`);
  console.log("| proofs of random events | median | p99 |");
  console.log("| --- | ---: | ---: |");
  console.log(`| first 1,000 (tiles read from the file) | ${fmt(pct(cold, 50), 3)} ms | ${fmt(pct(cold, 99), 3)} ms |`);
  console.log(`| next 1,000 (full tiles cached, 8 MiB at most) | ${fmt(pct(warm, 50), 3)} ms | ${fmt(pct(warm, 99), 3)} ms |`);
  console.log("(target: < 1 ms)");
  await log.close();
}

async function coveringLatency(): Promise<void> {
  const log = await fresh();
  const workload = new Workload(1000);
  const appendedAt = new Map<number, number>();
  const covered: number[] = [];
  let pending: number[] = [];
  const schedule = new CheckpointSchedule(log, signer, {
    every: 100_000_000, intervalMs: 1_000,
    onCheckpoint: (c) => {
      const t = now();
      const still: number[] = [];
      for (const seq of pending) {
        if (seq <= c.size) covered.push(t - (appendedAt.get(seq) as number));
        else still.push(seq);
      }
      pending = still;
    },
  });
  const events = workload.batches(0, 4000, 1).flat();
  const until = now() + 20_000;
  for (const e of events) {
    if (now() > until) break;
    const [stored] = await log.append([e]);
    if (stored !== undefined) {
      appendedAt.set(stored.seq, now());
      pending.push(stored.seq);
    }
    await new Promise((r) => setTimeout(r, 5));
  }
  // The last ones are covered by a checkpoint or two more.
  for (let i = 0; i < 30 && pending.length > 0; i++) await new Promise((r) => setTimeout(r, 100));
  await schedule.stop();
  await log.close();
  console.log(`\nFrom an append to the first signed checkpoint covering it (one event every ~5 ms for 20 s, checkpoints every 1 s): ${fmt(covered.length)} events`);
  console.log(`| median | p99 | max |`);
  console.log(`| ---: | ---: | ---: |`);
  console.log(`| ${fmt(pct(covered, 50))} ms | **${fmt(pct(covered, 99))} ms** | ${fmt(pct(covered, 100))} ms |`);
  console.log("(target: p99 ≤ 1,500 ms)");
}

/**
 * A witness's verifications per second: each request grows a log by one entry (a signed checkpoint
 * and its consistency proof from the size before), checked and cosigned by `src/tlog`, state kept
 * in memory (the durable write and HTTP around it: `npm run bench:witness`).
 */
function witnessVerifications(): void {
  const count = 1_000;
  const cosigner = must(cosignerFromSeed("bench.example/witness", new Uint8Array(32).fill(3)));
  const rates: number[] = [];
  for (let run = -1; run < RUNS; run++) {
    const log = new FakeLog("bench.example/log");
    const bodies = Array.from({ length: count }, (_, i) => Buffer.from(log.grow(1).body(i)));
    let state: WitnessedLog = { origin: log.origin, verifiers: [log.signer.verifier], size: 0, root: EMPTY_ROOT };
    const t0 = now();
    for (const body of bodies) {
      const a = addCheckpoint(body, () => state, { cosigners: [cosigner], now: 1_750_000_000 });
      if (a.status !== 200) throw new Error(`witness: ${a.status} ${a.body}`);
      state = { ...state, size: a.cosigned.size, root: a.cosigned.root };
    }
    if (run >= 0) rates.push((count * 1000) / (now() - t0));
  }
  console.log(`\nA witness's verifications (checkpoint signature, consistency proof, cosignature; state in memory; median of ${RUNS} runs of ${fmt(count)}): **${fmt(pct(rates, 50))} per second** (the witness over HTTP with its durable writes: \`npm run bench:witness\`)`);
}

/** Every figure of the tree. */
export async function treeBench(): Promise<void> {
  try {
    const parts = new Set((process.env.BENCH_TREE_PARTS ?? "append,covering,proofs,witness").split(","));
    if (parts.has("append")) await appendWithCheckpoints();
    if (parts.has("covering")) await coveringLatency();
    if (parts.has("proofs")) await proofs();
    if (parts.has("witness")) witnessVerifications();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
