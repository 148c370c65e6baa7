/**
 * Witness benchmark (`npm run bench:witness`, or `npx tsx bench/witness.ts`): add-checkpoint
 * requests per second against a running witness on 127.0.0.1 — one log at a time, then 8 logs
 * at once — beside, in the same run, the pure decision of `src/tlog` on the same requests and the
 * durable write alone (a temporary file written and synced, renamed, the folder synced), which
 * every cosignature waits for. Figures, not tests (see bench/README.md).
 *
 *   BENCH_REQUESTS=1000 (requests per log)   BENCH_RUNS=3 (runs; medians)   BENCH_DIR (a folder on the disk to measure; default the temp folder)
 */
import { mkdtempSync, rmSync } from "node:fs";
import { open, rename } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Buffer } from "node:buffer";
import { addCheckpoint, cosignerFromSeed, EMPTY_ROOT } from "../src/tlog/index.js";
import type { WitnessedLog } from "../src/tlog/index.js";
import { collectLogs, listenWitness, openWitness } from "../src/witness/index.js";
import { FakeLog, must } from "../src/witness/test-support.js";

const REQUESTS = Number(process.env["BENCH_REQUESTS"] ?? 1000);
const RUNS = Number(process.env["BENCH_RUNS"] ?? 3);
const BASE = process.env["BENCH_DIR"] ?? tmpdir();
const CONCURRENT = 8;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const perSecond = (n: number, ms: number) => (n / ms) * 1000;
const fmt = (r: number) => Math.round(r).toLocaleString("en-US");

/** `count` requests growing a log one entry at a time: old i, checkpoint i + 1 (signed before any timing). */
function requests(origin: string, count: number): { log: FakeLog; bodies: Buffer[] } {
  const log = new FakeLog(origin);
  const bodies: Buffer[] = [];
  for (let i = 0; i < count; i++) bodies.push(Buffer.from(log.grow(1).body(i)));
  return { log, bodies };
}

const logs = Array.from({ length: CONCURRENT }, (_, i) => requests(`bench.example/log${i}`, REQUESTS));
const first = logs[0] as (typeof logs)[number];

/** The pure decision over one log's requests, the state kept in memory. */
function pure(): number {
  const cosigner = must(cosignerFromSeed("bench.example/witness", new Uint8Array(32).fill(3)));
  let state: WitnessedLog = { origin: first.log.origin, verifiers: [first.log.signer.verifier], size: 0, root: EMPTY_ROOT };
  const t0 = performance.now();
  for (const body of first.bodies) {
    const a = addCheckpoint(body, () => state, { cosigners: [cosigner], now: 1_750_000_000 });
    if (a.status !== 200) throw new Error(`pure decision: ${a.status} ${a.body}`);
    state = { ...state, size: a.cosigned.size, root: a.cosigned.root };
  }
  return perSecond(first.bodies.length, performance.now() - t0);
}

/** The durable write alone, as the state store makes it, `count` times in one folder. */
async function durable(dir: string, count: number): Promise<number> {
  const text = `${JSON.stringify({ format: "x", checkpoint: "y".repeat(400) })}\n`;
  const t0 = performance.now();
  for (let i = 0; i < count; i++) {
    const f = await open(join(dir, "s.json.tmp"), "w", 0o600);
    await f.writeFile(text);
    await f.sync();
    await f.close();
    await rename(join(dir, "s.json.tmp"), join(dir, "s.json"));
    const d = await open(dir, "r");
    await d.sync();
    await d.close();
  }
  return perSecond(count, performance.now() - t0);
}

async function send(url: string, bodies: readonly Buffer[]): Promise<void> {
  for (const body of bodies) {
    const r = await fetch(`${url}/add-checkpoint`, { method: "POST", body });
    if (r.status !== 200) throw new Error(`witness: ${r.status} ${await r.text()}`);
  }
}

/** A fresh witness for every log; `which` logs are pushed, each by its own sequential client. */
async function served(which: typeof logs): Promise<number> {
  const dir = mkdtempSync(join(BASE, "bench-witness-"));
  try {
    const opened = must(openWitness({ dir, name: "bench.example/witness", logs: must(collectLogs(logs.map((l, i) => ({ text: l.log.line, where: `${i}` })))) }));
    const server = await listenWitness(opened.service, { host: "127.0.0.1", port: 0 });
    const t0 = performance.now();
    await Promise.all(which.map((l) => send(server.url, l.bodies)));
    const ms = performance.now() - t0;
    await server.close();
    opened.release();
    return perSecond(which.length * REQUESTS, ms);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const rows = { pure: [] as number[], durable: [] as number[], one: [] as number[], eight: [] as number[] };
const scratch = mkdtempSync(join(BASE, "bench-fsync-"));
try {
  for (let run = 0; run <= RUNS; run++) {
    const r = { pure: pure(), durable: await durable(scratch, Math.min(REQUESTS, 500)), one: await served([first]), eight: await served(logs) };
    if (run === 0) continue; // warm-up
    for (const k of Object.keys(rows) as (keyof typeof rows)[]) rows[k].push(r[k]);
  }
} finally {
  rmSync(scratch, { recursive: true, force: true });
}

const ratio = (xs: number[]) => (median(xs) / median(rows.pure)).toFixed(3);
console.log(`# Witness: ${REQUESTS.toLocaleString("en-US")} add-checkpoint requests per log, one entry each (median of ${RUNS} runs after a warm-up; ${BASE})\n`);
console.log("| what | requests/s | against the pure decision (same run) |\n| --- | ---: | ---: |");
console.log(`| the pure decision (parse, verify the log's signature and proof, cosign), state in memory: the baseline | ${fmt(median(rows.pure))} | 1.000 |`);
console.log(`| the durable write alone (write, fsync, rename, fsync the folder) | ${fmt(median(rows.durable))} | ${ratio(rows.durable)} |`);
console.log(`| the witness over HTTP, one log, one request at a time | ${fmt(median(rows.one))} | ${ratio(rows.one)} |`);
console.log(`| the witness over HTTP, ${CONCURRENT} logs at once (one client each) | ${fmt(median(rows.eight))} | ${ratio(rows.eight)} |`);
console.log(`\n${CONCURRENT} logs at once against one: ${(median(rows.eight) / median(rows.one)).toFixed(2)}× the requests per second (writes for different logs do not wait on one another).`);
