/**
 * Event store benchmark (`npm run bench:store`, or `npx tsx bench/store.ts`). Figures, not tests:
 * every figure is the median of several runs, printed as a table. See bench/README.md.
 *
 *   BENCH_EVENTS=1000000 (size of the large log)   BENCH_RUNS=5 (runs per append figure)
 *   BENCH_ONLY=owner (only the owner writes, FULL against NORMAL)   BENCH_OWNER_WRITES=400
 *   BENCH_ONLY=tree (only the Merkle tree's figures: bench/store-tree.ts)
 *   BENCH_ONLY=scale (only the figures as the log grows, 10^4 to BENCH_EVENTS, and at the largest)
 *   BENCH_ONLY=none (with --store postgres: only the PostgreSQL figures)
 *   BENCH_ONLY=frames (the pages one batch writes, by table and index: bench/store-frames.ts)
 *   --store postgres: then the same figures for the log on PostgreSQL (bench/store-postgres.ts), in
 *   the same run, beside these
 *
 * On a machine shared with other work, wall-clock rates follow the load; the CPU-time columns (the
 * appending thread's, and every thread's, including the store's checkpoint thread) do not.
 */
import { execSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { canonicalize } from "json-canonicalize";
// The SQLite adapter itself: the benchmark looks at its file (checkpoints, size) and inserts raw rows beside it.
import { openSqliteLog as openStore } from "../src/events/store.js";
import type { SqliteEventLog as EventLog } from "../src/events/store.js";
import type { NewEvent } from "../src/events/types.js";
import { Projector } from "../src/projections/projector.js";
import { why } from "../src/projections/index.js";
import { checkDecisions } from "../src/projections/check-decisions.js";
import { recheckAddresses } from "../src/egress/index.js";
import { Workload } from "./workload.js";
import { treeBench } from "./store-tree.js";
import { framesBench } from "./store-frames.js";
import { OWNER_CLI } from "../src/app/actor.js";
import { applyResources, deleteResource } from "../src/app/owner-edits.js";
import { parseResources } from "../src/app/resources.js";

const TOTAL = Number(process.env.BENCH_EVENTS ?? 1_000_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const PLUGINS = 1000;
const dir = mkdtempSync(join(tmpdir(), "openfief-bench-"));

const median = (xs: number[]): number => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)] as number; };
const fmt = (n: number, d = 0): string => n.toLocaleString("en-US", { maximumFractionDigits: d, minimumFractionDigits: d });
function time(fn: () => void): number { const t0 = process.hrtime.bigint(); fn(); return Number(process.hrtime.bigint() - t0) / 1e9; }
async function timeAsync(fn: () => Promise<unknown>): Promise<number> { const t0 = process.hrtime.bigint(); await fn(); return Number(process.hrtime.bigint() - t0) / 1e9; }

let workload = new Workload(PLUGINS);

/** CPU time of the calling thread (ns), from Linux's schedstat; NaN elsewhere. */
function threadCpuNs(): number {
  try { return Number(readFileSync("/proc/thread-self/schedstat", "utf8").split(" ")[0]); } catch { return Number.NaN; }
}

/** An append measurement: events per second of wall time, of the appending thread's CPU, and of the whole process's CPU. */
interface Rate { readonly wall: number; readonly thread: number; readonly process: number }

async function rate(count: number, fn: () => Promise<void>): Promise<Rate> {
  const t0 = threadCpuNs();
  const c0 = process.cpuUsage();
  const wall = await timeAsync(fn);
  const c = process.cpuUsage(c0);
  return { wall: count / wall, thread: count / ((threadCpuNs() - t0) / 1e9), process: count / ((c.user + c.system) / 1e6) };
}

/** Appends `n` events in transactions of `per` events (generation not timed). */
async function appendBatches(store: EventLog, n: number, per: number): Promise<Rate> {
  const batches = workload.batches(await store.head(), n, per);
  const count = batches.reduce((s, b) => s + b.length, 0);
  return rate(count, async () => { for (const b of batches) await store.append(b); });
}

/** Appends `n` events one per transaction (generation not timed). */
async function appendSingles(store: EventLog, n: number): Promise<Rate> {
  const evs = workload.batches(await store.head(), n, 1).flat();
  return rate(evs.length, async () => { for (const e of evs) await store.append([e]); });
}

interface RawRow { stream: string; version: number; type: string; data: string; actor: string; causedBy: number | null }

/** The same rows, canonical data computed beforehand, inserted without validation or hashing. */
function rawRows(events: readonly NewEvent[]): RawRow[] {
  const versions = new Map<string, number>();
  return events.map((e) => {
    const v = (versions.get(e.stream) ?? 0) + 1;
    versions.set(e.stream, v);
    return { stream: e.stream, version: v, type: e.type, data: canonicalize(e.data), actor: e.actor, causedBy: e.causedBy ?? null };
  });
}

function push(run: number, xs: number[], x: number): void { if (run >= 0) xs.push(x); }

async function appendComparison(): Promise<void> {
  const N = 20_000;
  const SINGLE = 4_000;
  const res = { batched: [] as number[], single: [] as number[], rawBatched: [] as number[], rawSingle: [] as number[] };
  for (let run = -1; run < RUNS; run++) {
    // Run -1 warms the JIT up and is not counted.
    const store = await openStore({ file: join(dir, `append-${run + 1}.db`) });
    workload = new Workload(PLUGINS);
    const evs: NewEvent[][] = [];
    while (evs.length * 20 < N) evs.push(workload.round(0));
    // Causes must name real seqs: events are appended in order from seq 1, so fix them up.
    let seq = 1;
    const flat = evs.flatMap((r) => { const b = seq; seq += r.length; return r.map((e) => (e.causedBy == null ? e : { ...e, causedBy: b + (e.causedBy) })); });
    const batches: NewEvent[][] = [];
    for (let i = 0; i < flat.length; i += 1000) batches.push(flat.slice(i, i + 1000));
    const singles = flat.slice(0, SINGLE).map((e) => ({ ...e, causedBy: null }));
    // Raw better-sqlite3, same table (same indexes, triggers and pragmas), same rows, canonical
    // JSON computed beforehand, no validation, no hashing: '' in prev_hash and hash.
    const raw = await openStore({ file: join(dir, `raw-${run + 1}.db`) });
    const db = raw.database;
    const rows = rawRows(flat);
    const more = rawRows(singles).map((r) => ({ ...r, version: r.version + 100_000 }));
    const ins = db.prepare("INSERT INTO events (stream, version, type, schema_version, time, actor, caused_by, data, prev_hash, hash) VALUES (?, ?, ?, 1, ?, ?, ?, ?, '', '')");
    const now = new Date().toISOString();
    const tx = db.transaction((rs: RawRow[]) => { for (const r of rs) ins.run(r.stream, r.version, r.type, now, r.actor, r.causedBy, r.data); });
    // Each store figure is measured right beside its raw figure, so both see the same load.
    push(run, res.batched, flat.length / await timeAsync(async () => { for (const b of batches) await store.append(b); }));
    push(run, res.rawBatched, rows.length / time(() => { for (let i = 0; i < rows.length; i += 1000) tx(rows.slice(i, i + 1000)); }));
    push(run, res.single, SINGLE / await timeAsync(async () => { for (const e of singles) await store.append([e]); }));
    push(run, res.rawSingle, SINGLE / time(() => { for (const r of more) ins.run(r.stream, r.version, r.type, now, r.actor, r.causedBy, r.data); }));
    await store.close();
    await raw.close();
  }
  const b = median(res.batched), rb = median(res.rawBatched), s = median(res.single), rs = median(res.rawSingle);
  // The ratio of each run's pair, then the median: steadier than a ratio of medians when the load moves.
  const ratio = (xs: number[], ys: number[]): number => median(xs.map((x, i) => (100 * x) / (ys[i] as number)));
  console.log(`\nAppend, ${fmt(N)} events (20-event rounds: plugin/config/signature/decision/workload + 14 egress decisions), median of ${RUNS} runs`);
  console.log(`| mode | store (validate + canonical JSON + hash chain) | raw better-sqlite3 insert, same rows, no hashing | store / raw (median of the runs' ratios) |`);
  console.log(`| --- | ---: | ---: | ---: |`);
  console.log(`| batched, 1000 events per transaction | ${fmt(b)} events/s | ${fmt(rb)} rows/s | ${fmt(ratio(res.batched, res.rawBatched), 1)} % |`);
  console.log(`| one event per transaction | ${fmt(s)} events/s | ${fmt(rs)} rows/s (autocommit) | ${fmt(ratio(res.single, res.rawSingle), 1)} % |`);
  console.log(`(ratio of the medians: batched ${fmt((100 * b) / rb, 1)} %, single ${fmt((100 * s) / rs, 1)} %; runs' batched ratios: ${res.batched.map((x, i) => fmt((100 * x) / (res.rawBatched[i] as number), 1)).join(", ")})`);
}

async function whyLatencyMs(store: EventLog, n = 300): Promise<number> {
  const xs: number[] = [];
  for (let i = 0; i < n; i++) {
    const name = `p${(i * 7919) % Math.min(PLUGINS, workload.rounds)}`;
    xs.push(await timeAsync(async () => { if ((await why(store, name)) === null) throw new Error(`no decision for ${name}`); }) * 1000);
  }
  return median(xs);
}

function fileSize(store: EventLog): number {
  store.database.pragma("wal_checkpoint(TRUNCATE)");
  let size = statSync(store.location).size;
  try { size += statSync(`${store.location}-wal`).size; } catch { /* none */ }
  return size;
}

async function scale(): Promise<void> {
  const store = await openStore({ file: join(dir, "large.db") });
  workload = new Workload(PLUGINS);
  const rows: string[] = [];
  const genStart = process.hrtime.bigint();
  const figures = new Map<number, { batched: Rate; single: Rate }>();
  for (const size of [10_000, 100_000, 1_000_000].filter((s) => s <= TOTAL)) {
    for (let left = size - await store.head(); left > 0; left = size - await store.head()) await appendBatches(store, Math.min(left, 100_000), 10_000);
    const genS = Number(process.hrtime.bigint() - genStart) / 1e9;
    // Let the bulk load's WAL and dirty pages settle, so the figures are steady-state appends.
    store.database.pragma("wal_checkpoint(TRUNCATE)");
    // And let the OS write back what the bulk load dirtied: otherwise the measured appends compete
    // with hundreds of megabytes of writeback that the generator, not the append path, caused.
    execSync("sync");
    await new Promise((resolve) => setTimeout(resolve, 3000));
    const at = await store.head();
    const batched: Rate[] = [], single: Rate[] = [];
    for (let i = 0; i < 3; i++) {
      // A whole turn of the plugins (each of the 1,000 touched once), so the figure holds whatever page each one's rows are on.
      batched.push(await appendBatches(store, 20_000, 1_000));
      single.push(await appendSingles(store, 1_000));
      // The checkpoint thread's work is part of the cost: let it finish before the next run.
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    const m = (xs: Rate[]): Rate => ({ wall: median(xs.map((x) => x.wall)), thread: median(xs.map((x) => x.thread)), process: median(xs.map((x) => x.process)) });
    figures.set(size, { batched: m(batched), single: m(single) });
    const f = figures.get(size) as { batched: Rate; single: Rate };
    const w = await whyLatencyMs(store);
    rows.push(`| ${fmt(at)} | ${fmt(f.batched.wall)} events/s | ${fmt(f.batched.thread)} / ${fmt(f.batched.process)} | ${fmt(f.single.wall)} events/s | ${fmt(f.single.thread)} / ${fmt(f.single.process)} | ${fmt(w, 3)} ms | ${fmt(fileSize(store) / await store.head(), 0)} B |`);
    console.error(`  … ${fmt(at)} events (generated in ${fmt(genS, 1)} s)`);
  }
  console.log(`\nCost as the log grows (same workload; 1,000 plugins; median of 3 runs of 20,000 batched and 1,000 single appends, why: median of 300 calls)`);
  console.log(`| events in the log | batched append | per CPU-second: appending thread / all threads | single-event append | per CPU-second: appending thread / all threads | why() | file size per event |`);
  console.log(`| ---: | ---: | ---: | ---: | ---: | ---: | ---: |`);
  for (const r of rows) console.log(r);
  const small = figures.get(10_000);
  const large = figures.get(1_000_000) ?? figures.get(100_000);
  if (small !== undefined && large !== undefined && large !== small) {
    const pct = (k: "wall" | "thread" | "process", mode: "batched" | "single"): string => fmt((100 * large[mode][k]) / small[mode][k], 0);
    console.log(`\nLargest log against 10,000 events (target: batched ≥ 80 %): batched ${pct("wall", "batched")} % wall, ${pct("thread", "batched")} % appending thread's CPU, ${pct("process", "batched")} % all threads' CPU; single ${pct("wall", "single")} % wall, ${pct("thread", "single")} % / ${pct("process", "single")} % CPU`);
  }

  const head = await store.head();
  const projector = new Projector(store);
  const rebuilds: number[] = [];
  let folded = 0;
  for (let i = 0; i < 3; i++) {
    rebuilds.push(await timeAsync(async () => { folded = (await projector.rebuild()).read; }));
  }
  const rb = median(rebuilds);
  const verifyS = await timeAsync(async () => { const v = await store.verify(); if (!v.ok) throw new Error(`verify failed at ${v.seq}`); });
  let checked = 0;
  const checkS = await timeAsync(async () => { const c = await checkDecisions(store, { egressAddresses: recheckAddresses }); checked = c.checked; if (c.divergences.length > 0) throw new Error("divergences"); });
  console.log(`\nAt ${fmt(head)} events`);
  console.log(`| measurement | result |`);
  console.log(`| --- | ---: |`);
  console.log(`| full rebuild of all 6 projections (median of 3) | ${fmt(rb, 2)} s = **${fmt(head / rb)} events/s** of log (${fmt(folded)} events of the projected types read and folded) |`);
  console.log(`| why() latency (median of 300) | ${fmt(await whyLatencyMs(store), 3)} ms |`);
  console.log(`| database size | ${fmt(fileSize(store) / head, 0)} bytes per event (${fmt(fileSize(store) / 1e6, 1)} MB, incl. projections) |`);
  console.log(`| verify() the whole hash chain | ${fmt(verifyS, 2)} s (${fmt(head / verifyS)} events/s) |`);
  console.log(`| checkDecisions() over the log | ${fmt(checkS, 2)} s (${fmt(checked)} decisions re-decided, 0 divergences) |`);
  await store.close();
}

/**
 * Owner writes as the use cases run them — `apply` of a PluginGrant, then `delete` of it, each one
 * commit synced before it returns (`synchronous=FULL`) — against the same writes at the store's
 * `NORMAL`, measured in the same run on the same file, back to back.
 */
async function ownerWrites(): Promise<void> {
  const N = Number(process.env.BENCH_OWNER_WRITES ?? 400);
  const full: number[] = [], normal: number[] = [];
  const grant = (i: number) => parseResources(`apiVersion: openfief.io/v1alpha1\nkind: PluginGrant\nmetadata: {name: p${i % 50}}\nspec: {capabilities: [connector], egress: [{host: api.example.com, port: ${1000 + i}}]}\n`, "bench");
  for (let run = -1; run < RUNS; run++) {
    const store = await openStore({ file: join(dir, `owner-${run + 1}.db`) });
    // The same use cases with durability taken out: what they cost at NORMAL.
    const relaxed = new Proxy(store, {
      get(t, p) {
        if (p === "durably") return <T>(fn: () => Promise<T>): Promise<T> => fn();
        const v = Reflect.get(t, p, t) as unknown;
        return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(t) : v;
      },
    });
    const docs = Array.from({ length: 2 * N }, (_, i) => grant(i));
    let i = 0;
    const writes = (st: EventLog) => async (): Promise<void> => {
      for (let k = 0; k < N / 2; k++, i++) {
        await applyResources(st, docs[i] as ReturnType<typeof grant>, OWNER_CLI);
        await deleteResource(st, "grant", `p${i % 50}`, OWNER_CLI);
      }
    };
    push(run, normal, (1000 * await timeAsync(writes(relaxed))) / N);
    push(run, full, (1000 * await timeAsync(writes(store))) / N);
    await store.close();
  }
  const ratio = median(full.map((f, k) => f / (normal[k] as number)));
  console.log(`\nOwner writes (apply, then delete, of a PluginGrant: one commit each), ${fmt(N)} per run, median of ${RUNS} runs`);
  console.log(`| durability | per owner write | FULL / NORMAL (median of the runs' ratios) |`);
  console.log(`| --- | ---: | ---: |`);
  console.log(`| FULL: on disk before it is answered (what the use cases do) | ${fmt(median(full), 3)} ms | ${fmt(ratio, 1)} × |`);
  console.log(`| NORMAL: the same writes, lost on a power loss until the next checkpoint | ${fmt(median(normal), 3)} ms | 1 × |`);
}

console.log(`# Event store benchmark — node ${process.version}, ${new Date().toISOString()}`);
try {
  // BENCH_ONLY=owner: only the owner writes' figure (seconds, not minutes).
  if (process.env.BENCH_ONLY === "owner") await ownerWrites();
  else if (process.env.BENCH_ONLY === "tree") await treeBench();
  else if (process.env.BENCH_ONLY === "scale") await scale();
  else if (process.env.BENCH_ONLY === "frames") await framesBench();
  else if (process.env.BENCH_ONLY === "none") { /* only the PostgreSQL figures, with --store postgres */ }
  else {
    await appendComparison();
    await ownerWrites();
    await scale();
    await treeBench();
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}

// `npm run bench:store -- --store postgres`: the PostgreSQL log's figures after SQLite's, in the same run.
const storeArg = process.argv.indexOf("--store");
if (storeArg >= 0 && process.argv[storeArg + 1] === "postgres") {
  console.log("\nThe same log on PostgreSQL (bench/store-postgres.ts), in the same run:\n");
  await import("./store-postgres.js");
}
