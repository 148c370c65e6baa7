/**
 * The PostgreSQL event log's benchmark (`npx tsx bench/store-postgres.ts`). It starts its own
 * PostgreSQL (test/support/postgres.ts, server defaults: fsync on, every commit flushed) and prints
 * figures, not verdicts; each is set beside a baseline measured in the same run:
 *
 * - append, batched (1,000 events per transaction) and one event per transaction, beside raw `pg`
 *   inserts of the same rows (the adapter's rows, hashes included) into a copy of the events table
 *   (`LIKE events INCLUDING ALL`: the same columns, checks and indexes, no guards), one
 *   parameterised multi-row INSERT per 1,000 rows; the difference is the adapter's own work
 *   (validation, canonical JSON, hashing, the write lock, the head read, the notification);
 * - a rebuild-like read of the whole log by `pages()` (no hashes), events per second;
 * - the lookups' and `last`'s latency (median and 95th percentile of 200 calls on random plugins)
 *   and batched append, at 10^4, 10^5 and 10^6 events (`BENCH_EVENTS` caps the largest).
 *
 * - the tables beside the log: a projection's commit of 10,000 changed rows (and of 10,000 new
 *   ones), beside a raw `pg` upsert of the same rows into a table of their own in one transaction;
 *   and the egress counts catching up over a log of the workload (in steps of 20,000 seqs, as the
 *   projection does: read the decisions' facts, count them, add the counts with the checkpoint),
 *   decisions per second, beside a read of the same decisions by `pages()`.
 *
 * Targets it reports against: batched append ≥ 50 % of raw inserts; lookups < 5 ms at 10^6; page
 * read ≥ 100k events/s; append at the largest size ≥ 80 % of its rate at 10^4.
 *
 *   BENCH_EVENTS=1000000 (largest log)   BENCH_RUNS=3 (runs per append figure)
 *   BENCH_PART=tables (only the tables' figures)   BENCH_PART=append (only append beside raw inserts)   BENCH_COUNTED=100000 (events of the log counted)
 */
import { readdirSync, readFileSync } from "node:fs";
import { availableParallelism, loadavg } from "node:os";
import pg from "pg";
import { openPostgresLog } from "../src/events/postgres/index.js";
import type { RawEventRow } from "../src/events/chain.js";
import type { EventLog } from "../src/events/port.js";
import type { NewEvent } from "../src/events/types.js";
import { EGRESS_FAILURE_CODES } from "../src/events/catalog/egress-events.js";
import type { EgressCountRow, EgressDecisionFacts, ProjectionTableSpec } from "../src/events/tables.js";
import { rowArrays, unnestInsertSql } from "../src/events/postgres/row-arrays.js";
import { startPostgres } from "../test/support/postgres.js";
import { Workload } from "./workload.js";

const LARGEST = Number(process.env.BENCH_EVENTS ?? 1_000_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const PLUGINS = 1000;
const SIZES = [10_000, 100_000, 1_000_000].filter((n) => n < LARGEST).concat([LARGEST]);
const BATCH = 1000;

const median = (xs: readonly number[]): number => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)] as number; };
const pct = (xs: readonly number[], p: number): number => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(s.length * p))] as number; };
const fmt = (n: number, d = 0): string => n.toLocaleString("en-US", { maximumFractionDigits: d, minimumFractionDigits: d });
async function time(fn: () => Promise<unknown>): Promise<number> { const t0 = process.hrtime.bigint(); await fn(); return Number(process.hrtime.bigint() - t0) / 1e9; }

const COLUMNS = ["seq", "stream", "version", "type", "schema_version", "time", "actor", "caused_by", "data", "prev_hash", "hash"];
const TYPES = ["bigint", "text", "int", "text", "int", "text", "text", "bigint", "text", "text", "text"];

/** Raw inserts of rows into `table`: one parameterised multi-row INSERT per 1,000 rows, one transaction each. */
async function rawBatched(client: pg.Client, table: string, rows: readonly RawEventRow[]): Promise<void> {
  const sql = `INSERT INTO ${table} (${COLUMNS.join(", ")}) SELECT * FROM unnest(${TYPES.map((t, i) => `$${i + 1}::${t}[]`).join(", ")})`;
  for (let i = 0; i < rows.length; i += BATCH) {
    const chunk = rows.slice(i, i + BATCH);
    await client.query("BEGIN");
    await client.query(sql, [
      chunk.map((r) => r.seq), chunk.map((r) => r.stream), chunk.map((r) => r.version), chunk.map((r) => r.type), chunk.map((r) => r.schemaVersion),
      chunk.map((r) => r.time), chunk.map((r) => r.actor), chunk.map((r) => r.causedBy), chunk.map((r) => r.data), chunk.map((r) => r.prevHash), chunk.map((r) => r.hash),
    ]);
    await client.query("COMMIT");
  }
}

/** Raw single-row inserts, each its own transaction (autocommit). */
async function rawSingles(client: pg.Client, table: string, rows: readonly RawEventRow[]): Promise<void> {
  const sql = `INSERT INTO ${table} (${COLUMNS.join(", ")}) VALUES (${COLUMNS.map((_c, i) => `$${i + 1}`).join(", ")})`;
  for (const r of rows) await client.query({ name: `raw-single-${table}`, text: sql, values: [r.seq, r.stream, r.version, r.type, r.schemaVersion, r.time, r.actor, r.causedBy, r.data, r.prevHash, r.hash] });
}

async function rowsAfter(log: EventLog, afterSeq: number): Promise<RawEventRow[]> {
  const out: RawEventRow[] = [];
  for await (const page of log.rawPages({ afterSeq, pageSize: 10_000 })) out.push(...page);
  return out;
}

/** Appends `n` events of the workload in batches of `per` (generation not timed); events per second. */
async function appendRate(log: EventLog, workload: Workload, n: number, per: number): Promise<number> {
  const batches = workload.batches(await log.head(), n, per);
  const count = batches.reduce((s, b) => s + b.length, 0);
  return count / await time(async () => { for (const b of batches) await log.append(b); });
}

/**
 * CPU seconds used so far by the PostgreSQL server: the postmaster and every process it started
 * (backends, WAL writer, checkpointer), from Linux's /proc; NaN elsewhere. With the benchmark's
 * own CPU it prices an append in CPU, which the load of other work on the machine moves less than
 * the wall clock.
 */
function serverCpuSeconds(postmaster: number): number {
  try {
    let ticks = 0;
    for (const name of readdirSync("/proc")) {
      if (!/^[0-9]+$/.test(name)) continue;
      let stat: string;
      try { stat = readFileSync(`/proc/${name}/stat`, "utf8"); } catch { continue; }
      // The fields after the command's closing parenthesis: state, ppid, …; utime and stime are the 14th and 15th.
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(name) === postmaster || Number(f[1]) === postmaster) ticks += Number(f[11]) + Number(f[12]);
    }
    return ticks / 100;
  } catch {
    return Number.NaN;
  }
}

/** The postmaster's pid (the parent of any backend), or NaN when /proc cannot tell. */
function postmasterOf(server: Awaited<ReturnType<typeof startPostgres>>): number {
  try {
    const backend = Number(server.psql("SELECT pg_backend_pid()"));
    const status = readFileSync(`/proc/${backend}/status`, "utf8");
    return Number(/^PPid:\s+(\d+)/m.exec(status)?.[1] ?? Number.NaN);
  } catch {
    return Number.NaN;
  }
}

/** {@link appendRate}, also per CPU-second of this process and the server's processes together. */
async function appendRates(log: EventLog, workload: Workload, n: number, per: number, postmaster: number): Promise<{ wall: number; cpu: number }> {
  const batches = workload.batches(await log.head(), n, per);
  const count = batches.reduce((s, b) => s + b.length, 0);
  const c0 = process.cpuUsage();
  const s0 = serverCpuSeconds(postmaster);
  const wall = count / await time(async () => { for (const b of batches) await log.append(b); });
  const c = process.cpuUsage(c0);
  return { wall, cpu: count / ((c.user + c.system) / 1e6 + serverCpuSeconds(postmaster) - s0) };
}

/** The median of each run's ratio of x to y, in %: steadier than a ratio of medians when the load moves. */
const ratio = (xs: readonly number[], ys: readonly number[]): number => median(xs.map((x, i) => (100 * x) / (ys[i] as number)));

/** Raw inserts as the log sends its rows: the same statement, each column one binary array (row-arrays.ts). */
async function rawBinary(client: pg.Client, table: string, rows: readonly RawEventRow[]): Promise<void> {
  const sql = unnestInsertSql(table);
  for (let i = 0; i < rows.length; i += BATCH) {
    await client.query("BEGIN");
    await client.query({ name: `raw-binary-${table}`, text: sql, values: rowArrays(rows.slice(i, i + BATCH)) });
    await client.query("COMMIT");
  }
}

type Mode = "batched" | "rawBatched" | "rawBinary" | "single" | "rawSingle";
interface Measured { rate: number; cpu: number; server: number }

/** Runs `fn` over `count` events or rows: its rate, and this process's and the server's CPU, in ms per 1,000. */
async function measured(count: number, postmaster: number, fn: () => Promise<unknown>): Promise<Measured> {
  const c0 = process.cpuUsage();
  const s0 = serverCpuSeconds(postmaster);
  const rate = count / await time(fn);
  const c = process.cpuUsage(c0);
  return { rate, cpu: (c.user + c.system) / count, server: ((serverCpuSeconds(postmaster) - s0) * 1e6) / count };
}

function printAppend(res: Record<Mode, Measured[]>, n: number, single: number): void {
  const rates = (m: Mode): number[] => res[m].map((x) => x.rate);
  const cpu = (m: Mode): string => `${fmt(median(res[m].map((x) => x.cpu)), 1)} + ${fmt(median(res[m].map((x) => x.server)), 1)}`;
  console.log(`\nAppend beside raw pg inserts of the same rows (${fmt(n)} batched, ${fmt(single)} single; median of ${RUNS} runs; CPU: ms per 1,000 of this process + the server's)`);
  console.log("| mode | log (validate, canonical JSON, hash, lock, notify) | raw pg INSERT, same rows | log / raw (median of the runs' ratios) | CPU, log | CPU, raw |");
  console.log("| --- | ---: | ---: | ---: | ---: | ---: |");
  console.log(`| batched, 1,000 per transaction; raw: pg's text arrays | ${fmt(median(rates("batched")))} events/s | ${fmt(median(rates("rawBatched")))} rows/s | ${fmt(ratio(rates("batched"), rates("rawBatched")), 1)} % (target ≥ 50 %) | ${cpu("batched")} | ${cpu("rawBatched")} |`);
  console.log(`| batched; raw: the log's own statement and binary arrays | | ${fmt(median(rates("rawBinary")))} rows/s | ${fmt(ratio(rates("batched"), rates("rawBinary")), 1)} % | | ${cpu("rawBinary")} |`);
  console.log(`| one per transaction | ${fmt(median(rates("single")))} events/s | ${fmt(median(rates("rawSingle")))} rows/s | ${fmt(ratio(rates("single"), rates("rawSingle")), 1)} % | ${cpu("single")} | ${cpu("rawSingle")} |`);
}

/** One run of the append figures, in a database of its own. */
async function appendRun(server: Awaited<ReturnType<typeof startPostgres>>, run: number, postmaster: number, n: number, single: number): Promise<Record<Mode, Measured>> {
  const db = server.createDatabase(`append_${run + 1}`);
  const log = await openPostgresLog({ url: server.urlFor(db) });
  const client = new pg.Client({ connectionString: server.urlFor(db) });
  await client.connect();
  try {
    await client.query("CREATE TABLE raw_batched (LIKE events INCLUDING ALL); CREATE TABLE raw_binary (LIKE events INCLUDING ALL); CREATE TABLE raw_single (LIKE events INCLUDING ALL)");
    const workload = new Workload(PLUGINS);
    const batches = workload.batches(await log.head(), n, BATCH);
    const out = { batched: await measured(n, postmaster, async () => { for (const b of batches) await log.append(b); }) } as Record<Mode, Measured>;
    const rows = await rowsAfter(log, 0);
    // The two raw inserts in turns, so that neither is always the one run later.
    const raws: [Mode, () => Promise<void>][] = [["rawBatched", () => rawBatched(client, "raw_batched", rows)], ["rawBinary", () => rawBinary(client, "raw_binary", rows)]];
    for (const [mode, fn] of run % 2 === 0 ? raws : raws.reverse()) out[mode] = await measured(rows.length, postmaster, fn);
    const head = await log.head();
    const singles: NewEvent[] = workload.batches(head, single, 1).flat().map((e) => ({ ...e, causedBy: null }));
    out.single = await measured(single, postmaster, async () => { for (const e of singles) await log.append([e]); });
    const singleRows = await rowsAfter(log, head);
    out.rawSingle = await measured(singleRows.length, postmaster, () => rawSingles(client, "raw_single", singleRows));
    return out;
  } finally {
    await client.end();
    await log.close();
  }
}

async function appendComparison(server: Awaited<ReturnType<typeof startPostgres>>): Promise<{ text: number; binary: number }> {
  const N = 20_000;
  const SINGLE = 1_000;
  const postmaster = postmasterOf(server);
  const res: Record<Mode, Measured[]> = { batched: [], rawBatched: [], rawBinary: [], single: [], rawSingle: [] };
  for (let run = -1; run < RUNS; run++) {
    const out = await appendRun(server, run, postmaster, N, SINGLE);
    if (run >= 0) for (const m of Object.keys(res) as Mode[]) res[m].push(out[m]);
  }
  printAppend(res, N, SINGLE);
  const rates = (m: Mode): number[] => res[m].map((x) => x.rate);
  return { text: ratio(rates("batched"), rates("rawBatched")), binary: ratio(rates("batched"), rates("rawBinary")) };
}

interface SizeFigures { size: number; append: number; appendCpu: number; pages: { wall: number; cpu: number }; lookups: Map<string, { p50: number; p95: number }> }

async function lookupLatencies(log: EventLog, rounds: number): Promise<Map<string, { p50: number; p95: number }>> {
  const head = await log.head();
  const verdict = (await log.read({ stream: "trust", limit: 1 }))[0];
  const digest = verdict?.type === "signature.verdict" ? verdict.data.digest : "";
  const probes: Record<string, (p: string) => Promise<unknown>> = {
    "last(stream)": (p) => log.last(`plugin/${p}`),
    "last(stream, type)": (p) => log.last(`plugin/${p}`, "rollout.decided"),
    "lastOf (2 types, before a seq)": (p) => log.lookups.lastOf(`plugin/${p}`, ["plugin.observed", "grant.observed"], head - 5_000),
    "firstAfter": (p) => log.lookups.firstAfter(`plugin/${p}`, "workload.applied", Math.floor(head / 2)),
    "newest (3 types, 10)": (p) => log.lookups.newest(`plugin/${p}`, ["rollout.decided", "workload.desired", "workload.applied"], 10),
    "configVerdict": (p) => log.lookups.configVerdict(`plugin/${p}`, "registry.example/plugins/p@sha256:none", head),
    "signatureVerdict": () => log.lookups.signatureVerdict(digest, null),
    "seqAt": () => log.lookups.seqAt(new Date(Date.now() - 1_000)),
    "egressCandidates (plugin, scan 200)": (p) => log.lookups.egressCandidates({ plugin: p, afterSeq: Math.floor(head / 2), scan: 200, host: "api.example.com" }),
    "latestEgressDecisions (10)": (p) => log.lookups.latestEgressDecisions(p, head, { from: "2000-01-01T00:00:00.000Z", to: "2100-01-01T00:00:00.000Z" }, 10),
    "streamHeads(\"plugin/\") (1,000 streams)": () => log.lookups.streamHeads("plugin/"),
  };
  const out = new Map<string, { p50: number; p95: number }>();
  for (const [name, probe] of Object.entries(probes)) {
    const xs: number[] = [];
    for (let i = 0; i < 200; i++) {
      const p = `p${(i * 7919) % Math.min(PLUGINS, rounds)}`;
      xs.push(await time(() => probe(p)) * 1000);
    }
    out.set(name, { p50: median(xs), p95: pct(xs, 0.95) });
  }
  return out;
}

/** A whole read of the log by pages: events per second of wall time, and per second of this process's CPU. */
async function pageRate(log: EventLog): Promise<{ wall: number; cpu: number }> {
  let n = 0;
  const c0 = process.cpuUsage();
  const s = await time(async () => { for await (const page of log.pages({ hashes: false, pageSize: 5_000 })) n += page.length; });
  const c = process.cpuUsage(c0);
  return { wall: n / s, cpu: n / ((c.user + c.system) / 1e6) };
}

/** The figures by size of the log, and against the targets. */
function report(figures: readonly SizeFigures[], batchedRatio: { text: number; binary: number }): void {
  const first = figures[0] as SizeFigures;
  const last = figures[figures.length - 1] as SizeFigures;
  console.log(`\nBy size of the log (append: 1,000 per transaction; pages: the whole log by pages(), no hashes)`);
  console.log(`| figure | ${figures.map((f) => `${fmt(f.size)} events`).join(" | ")} |`);
  console.log(`| --- |${figures.map(() => " ---: |").join("")}`);
  console.log(`| batched append | ${figures.map((f) => `${fmt(f.append)} events/s`).join(" | ")} |`);
  console.log(`| batched append, per CPU-second of this process and the server's | ${figures.map((f) => `${fmt(f.appendCpu)} events/s`).join(" | ")} |`);
  console.log(`| page read | ${figures.map((f) => `${fmt(f.pages.wall)} events/s`).join(" | ")} |`);
  console.log(`| page read, per CPU-second of the reading process | ${figures.map((f) => `${fmt(f.pages.cpu)} events/s`).join(" | ")} |`);
  for (const name of first.lookups.keys()) {
    console.log(`| ${name}, ms (median / p95) | ${figures.map((f) => { const l = f.lookups.get(name); return l === undefined ? "" : `${fmt(l.p50, 2)} / ${fmt(l.p95, 2)}`; }).join(" | ")} |`);
  }
  const worst = Math.max(...[...last.lookups.entries()].filter(([n]) => !n.startsWith("streamHeads")).map(([, l]) => l.p50));
  console.log(`\nAgainst the targets:`);
  console.log(`- batched append / raw inserts: ${fmt(batchedRatio.text, 1)} % (median of the runs' ratios; ≥ 50 %); / raw inserts sent as the log sends them: ${fmt(batchedRatio.binary, 1)} %`);
  console.log(`- slowest single-event lookup at ${fmt(last.size)}: ${fmt(worst, 2)} ms median (< 5 ms)`);
  console.log(`- page read at ${fmt(last.size)}: ${fmt(last.pages.wall)} events/s (≥ 100,000); ${fmt(last.pages.cpu)} per CPU-second of the reading process`);
  console.log(`- append at ${fmt(last.size)} / at ${fmt(first.size)}: ${fmt((100 * last.append) / first.append, 1)} % (≥ 80 %); per CPU-second of this process and the server's ${fmt((100 * last.appendCpu) / first.appendCpu, 1)} %`);
  console.log(`(load average when done: ${loadavg().map((l) => l.toFixed(2)).join(", ")} on ${availableParallelism()} cores)`);
}

const SPEC: ProjectionTableSpec = { name: "bench_rows", version: 1, table: "bench_rows", columns: [{ name: "image", type: "TEXT" }, { name: "round", type: "INTEGER" }] };
const CHANGED = 10_000;

/** A projection's commit of 10,000 rows, new then changed, beside a raw upsert of the same rows: seconds per run. */
async function projectionCommit(server: Awaited<ReturnType<typeof startPostgres>>): Promise<void> {
  const res = { fresh: [] as number[], changed: [] as number[], raw: [] as number[] };
  for (let run = -1; run < RUNS; run++) {
    const db = server.createDatabase(`commit_${run + 1}`);
    const log = await openPostgresLog({ url: server.urlFor(db) });
    const client = new pg.Client({ connectionString: server.urlFor(db) });
    await client.connect();
    await client.query("CREATE TABLE raw_rows (key text COLLATE \"C\" PRIMARY KEY, image text, round bigint)");
    const keys = Array.from({ length: CHANGED }, (_, i) => `plugin-${String(i).padStart(5, "0")}`);
    const rows = (round: number) => keys.map((k, i) => [k, [`registry.example/plugins/p@sha256:${String(i * round).padStart(64, "0")}`, round]] as const);
    const t = log.tables.projections;
    await t.open([SPEC]);
    const fresh = await time(() => t.commit([{ spec: SPEC, upserts: rows(1), deletes: [] }], 1));
    const changed = await time(() => t.commit([{ spec: SPEC, upserts: rows(2), deletes: [] }], 2));
    const raw = await time(async () => {
      for (const round of [1, 2]) {
        const r = rows(round);
        await client.query("BEGIN");
        await client.query("INSERT INTO raw_rows SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[]) ON CONFLICT (key) DO UPDATE SET image = excluded.image, round = excluded.round",
          [r.map((x) => x[0]), r.map((x) => x[1][0]), r.map((x) => x[1][1])]);
        await client.query("COMMIT");
      }
    }) / 2;
    if (run >= 0) { res.fresh.push(fresh); res.changed.push(changed); res.raw.push(raw); }
    await client.end();
    await log.close();
  }
  console.log(`\nA projection's commit of ${fmt(CHANGED)} rows (median of ${RUNS} runs)`);
  console.log("| commit | time | rows/s | raw pg upsert of the same rows (one statement, one transaction) | commit's speed / raw's |");
  console.log("| --- | ---: | ---: | ---: | ---: |");
  for (const [what, xs] of [["10,000 new rows", res.fresh], ["10,000 changed rows", res.changed]] as const) {
    console.log(`| ${what} | ${fmt(median(xs) * 1000, 1)} ms | ${fmt(CHANGED / median(xs))} | ${fmt(median(res.raw) * 1000, 1)} ms | ${fmt(ratio(res.raw, xs), 1)} % |`);
  }
}

/** Decisions counted per unit, plugin and destination (what the egress counts projection adds). */
function tallyDecisions(facts: readonly EgressDecisionFacts[]): EgressCountRow[] {
  const out = new Map<string, { -readonly [K in keyof EgressCountRow]: EgressCountRow[K] }>();
  for (const f of facts) {
    const host = f.host.toLowerCase();
    const t = Date.parse(f.time);
    [1_000, 60_000, 3_600_000, 86_400_000].forEach((unit, level) => {
      const start = Math.floor(t / unit) * unit;
      const key = `${level}\u0000${start}\u0000${f.plugin}\u0000${host}\u0000${f.port}`;
      let row = out.get(key);
      if (row === undefined) out.set(key, (row = { level, start, plugin: f.plugin, host, port: f.port, allowed: 0, refused: 0, failed: 0, lastSeq: 0 }));
      if (f.allowed) row.allowed++;
      else if (EGRESS_FAILURE_CODES.has(f.reason)) row.failed++;
      else row.refused++;
      row.lastSeq = f.seq;
    });
  }
  return [...out.values()];
}

/** The egress counts catching up over a log of the workload, beside a read of the same decisions by pages. */
async function egressCatchUp(server: Awaited<ReturnType<typeof startPostgres>>): Promise<void> {
  const size = Number(process.env.BENCH_COUNTED ?? 100_000);
  const db = server.createDatabase("counted");
  const log = await openPostgresLog({ url: server.urlFor(db) });
  await appendRate(log, new Workload(PLUGINS), size, BATCH);
  const head = await log.head();
  const counts = log.tables.egressCounts;
  await counts.open(1);
  const res = { counts: [] as number[], pages: [] as number[] };
  let decisions = 0;
  for (let run = -1; run < RUNS; run++) {
    await counts.reset();
    const s = await time(async () => {
      for (let from = await counts.checkpoint(); from < head;) {
        const to = Math.min(head, from + 20_000);
        if (!(await counts.add(from, to, tallyDecisions(await counts.decisions(from, to))))) throw new Error("the checkpoint moved");
        from = to;
      }
    });
    decisions = 0;
    const p = await time(async () => { for await (const page of log.pages({ types: ["egress.decision"], pageSize: 20_000, hashes: false })) decisions += page.length; });
    if (run >= 0) { res.counts.push(decisions / s); res.pages.push(decisions / p); }
  }
  console.log(`\nThe egress counts catching up over ${fmt(head)} events (${fmt(decisions)} decisions; median of ${RUNS} runs)`);
  console.log("| catch-up (facts read, counted, added with the checkpoint) | pages() of the same decisions | catch-up / pages |");
  console.log("| ---: | ---: | ---: |");
  console.log(`| ${fmt(median(res.counts))} decisions/s | ${fmt(median(res.pages))} decisions/s | ${fmt(ratio(res.counts, res.pages), 1)} % |`);
  await log.close();
}

async function main(): Promise<void> {
  const server = await startPostgres({ settings: { shared_buffers: "256MB", max_wal_size: "4GB" } });
  try {
    const part = process.env.BENCH_PART;
    if (part !== "append") {
      await projectionCommit(server);
      await egressCatchUp(server);
    }
    if (part === "tables") return;
    const batchedRatio = await appendComparison(server);
    if (part === "append") return;
    const db = server.createDatabase("grow");
    const log = await openPostgresLog({ url: server.urlFor(db) });
    const workload = new Workload(PLUGINS);
    const postmaster = postmasterOf(server);
    const figures: SizeFigures[] = [];
    for (const size of SIZES) {
      const head = await log.head();
      // The append figure is the last events reaching the size (20,000, or all of the first size's).
      const measured = Math.min(20_000, size - head);
      const fill = size - head - measured;
      if (fill > 0) {
        const t0 = Date.now();
        await appendRate(log, workload, fill, BATCH);
        console.log(`(filled to ${fmt(await log.head())} events in ${fmt((Date.now() - t0) / 1000, 1)} s)`);
      }
      const rates: { wall: number; cpu: number }[] = [];
      for (let i = 0; i < 4; i++) rates.push(await appendRates(log, workload, measured / 4, BATCH, postmaster));
      figures.push({ size: await log.head(), append: median(rates.map((r) => r.wall)), appendCpu: median(rates.map((r) => r.cpu)), pages: await pageRate(log), lookups: await lookupLatencies(log, workload.rounds) });
      const f = figures[figures.length - 1] as SizeFigures;
      console.log(`at ${fmt(f.size)} events: batched append ${fmt(f.append)} events/s (${fmt(f.appendCpu)} per CPU-second of this process and the server's), pages ${fmt(f.pages.wall)} events/s (${fmt(f.pages.cpu)} per CPU-second of this process)`);
    }
    report(figures, batchedRatio);
    await log.close();
  } finally {
    await server.stop();
  }
}

await main();
