/**
 * `npm run bench:egress -- --store postgres`: the egress proxy's decisions committed to the
 * cluster's one log. In the same run, on this machine:
 *
 * - **sqlite ×1**: one proxy, its writer thread on a SQLite file (the embedded default);
 * - **postgres ×1**: one proxy, its writer thread on a PostgreSQL database;
 * - **postgres ×2**: two proxies (two processes, as two replicas) on that one database, each
 *   CONNECT sent to one of them in turn.
 *
 * Each proxy is a process of its own with every check on (token, allow-list, address check, the
 * decision committed by the writer thread before the 200); DNS is answered in-process with a
 * public address that the dialer maps to a local upstream, so nothing leaves the machine. Each
 * round opens `BENCH_STORE_CONNECTS` CONNECTs at a concurrency (`BENCH_STORE_CONCURRENCY`, default
 * 16 and 128), each closed once its 200 arrives. Figures: CONNECTs per second (the round's wall
 * time), and the commit latency the proxies saw (from `record()` to its commit: median and 95th
 * percentile), medians of `BENCH_ROUNDS` rounds interleaved across the set-ups. PostgreSQL runs
 * with its defaults (fsync on: every commit flushed); the SQLite proxy with its default
 * (`synchronous=NORMAL`, ADR 0096). The run ends by verifying each log's chain.
 */
import { fork, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { connect as netConnect, createServer, Socket, type AddressInfo } from "node:net";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import type { DecisionRecorder } from "../src/egress/index.js";

const SELF = fileURLToPath(import.meta.url);
const HOST = "api.bench.test";
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONNECTS = Number(process.env.BENCH_STORE_CONNECTS ?? 2000);
const CONCURRENCY = (process.env.BENCH_STORE_CONCURRENCY ?? "16,128").split(",").map(Number);

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
}

function median(xs: readonly number[]): number {
  return quantile([...xs].sort((a, b) => a - b), 0.5);
}

// ───────────────────────────── the proxy, in a process of its own ─────────────────────────────

async function roleProxy(): Promise<void> {
  const upstreamPort = Number(arg("--upstream"));
  const at = arg("--log") ?? "";
  const dir = mkdtempSync(join(tmpdir(), "bench-egress-store-"));
  const egress = await import("../src/egress/index.js");
  const { token } = await egress.mintEgressToken(dir, "bench", { ttlSeconds: 3600 });
  const allowLists = new egress.MemoryAllowListSource();
  if (!allowLists.setData({ bench: `${HOST}:${upstreamPort}\n` })) throw new Error("allow-list");
  const actor = `egress-proxy/${arg("--id") ?? "0"}`;
  let store: { close(): Promise<void> } | undefined;
  let writer;
  if (at.startsWith("sqlite:")) {
    const file = at.slice("sqlite:".length);
    const { openStore } = await import("../src/events/index.js");
    store = await openStore({ file });
    writer = await egress.WorkerDecisionRecorder.open({ file, actor });
  } else writer = await egress.WorkerDecisionRecorder.open({ url: at, actor });
  // The commit latency: from the decision handed to the writer to its commit.
  let latencies: number[] = [];
  const recorder: DecisionRecorder = {
    async record(d) {
      const t0 = performance.now();
      await writer.record(d);
      latencies.push(performance.now() - t0);
    },
    recordRefusal: (r) => writer.recordRefusal(r),
    close: () => writer.close(),
  };
  const log = egress.bufferedLog({ dest: join(dir, "decisions.log") });
  const proxy = egress.createEgressProxy({
    reviewer: new egress.CachingTokenReviewer(new egress.JwksTokenReviewer({ jwks: egress.readEmbeddedJwks(dir), issuer: egress.EMBEDDED_ISSUER })),
    allowLists,
    resolver: { resolve: async () => ({ ok: true, addresses: ["8.8.4.4"] }) },
    connect: (a) => (a.address === "8.8.4.4" ? egress.dialTcp({ address: "127.0.0.1", family: 4, port: a.port }) : new Socket()),
    recorder,
    logger: log.logger,
    flushLog: () => log.close(),
    env: {},
    options: { host: "127.0.0.1", port: 0, maxTunnels: 100_000 },
  });
  const { port } = await proxy.listen();
  process.on("message", (m: { stats?: boolean }) => {
    if (m.stats !== true) return;
    const sorted = latencies.sort((a, b) => a - b);
    latencies = [];
    process.send?.({ count: sorted.length, p50: quantile(sorted, 0.5), p95: quantile(sorted, 0.95), batches: writer.committed.batches });
  });
  process.on("disconnect", () => {
    void proxy.close().finally(async () => {
      await store?.close();
      rmSync(dir, { recursive: true, force: true });
      process.exit(0);
    });
  });
  process.send?.({ port, token });
}

// ───────────────────────────── the parent ─────────────────────────────

interface Proxy {
  readonly child: ChildProcess;
  readonly port: number;
  readonly auth: string;
}

function startProxy(args: string[]): Promise<Proxy> {
  const child = fork(SELF, ["--role", "proxy", ...args], { execArgv: ["--import", "tsx"], stdio: ["ignore", "ignore", "inherit", "ipc"] });
  return new Promise((resolve, reject) => {
    child.once("message", (m: { port: number; token: string }) => resolve({ child, port: m.port, auth: `Basic ${Buffer.from(`plugin:${m.token}`).toString("base64")}` }));
    child.once("exit", (code) => reject(new Error(`a proxy exited (${String(code)}) before it listened`)));
  });
}

function stats(p: Proxy): Promise<{ count: number; p50: number; p95: number; batches: number }> {
  return new Promise((resolve) => {
    p.child.once("message", resolve);
    p.child.send({ stats: true });
  });
}

/** One CONNECT through `p`: resolves once its 200 arrived (and closes it), rejects on anything else. */
function connectOnce(p: Proxy, upstreamPort: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const s = netConnect({ host: "127.0.0.1", port: p.port });
    let head = "";
    s.on("connect", () => s.write(`CONNECT ${HOST}:${upstreamPort} HTTP/1.1\r\nHost: ${HOST}:${upstreamPort}\r\nProxy-Authorization: ${p.auth}\r\n\r\n`));
    s.on("data", (d: Buffer) => {
      head += d.toString("latin1");
      if (!head.includes("\r\n\r\n")) return;
      s.destroy();
      if (head.startsWith("HTTP/1.1 200")) resolve();
      else reject(new Error(head.split("\r\n")[0]));
    });
    s.on("error", reject);
  });
}

/** `total` CONNECTs, at most `concurrency` at once, sent to the proxies in turn; CONNECTs per second. */
async function round(proxies: readonly Proxy[], upstreamPort: number, total: number, concurrency: number): Promise<number> {
  let next = 0;
  const t0 = performance.now();
  const lane = async (): Promise<void> => {
    for (let i = next++; i < total; i = next++) await connectOnce(proxies[i % proxies.length] as Proxy, upstreamPort);
  };
  await Promise.all(Array.from({ length: concurrency }, lane));
  return total / ((performance.now() - t0) / 1000);
}

interface SetUp {
  readonly name: string;
  readonly proxies: Proxy[];
}

function push(m: Map<string, number[]>, key: string, v: number): void {
  const list = m.get(key) ?? [];
  list.push(v);
  m.set(key, list);
}

/** The table's rows at one concurrency: rounds interleaved across the set-ups, medians. */
async function measure(setups: readonly SetUp[], upstreamPort: number, c: number, progress: (what: string) => void): Promise<string[]> {
  const rates = new Map<string, number[]>();
  const p50s = new Map<string, number[]>();
  const p95s = new Map<string, number[]>();
  for (let r = 0; r < ROUNDS; r++) {
    for (const s of setups) {
      progress(`${s.name}, concurrency ${c}, round ${r + 1}/${ROUNDS}`);
      push(rates, s.name, await round(s.proxies, upstreamPort, CONNECTS, c));
      const st = await Promise.all(s.proxies.map(stats));
      // Across the set-up's proxies: the larger of their percentiles (the slower replica).
      push(p50s, s.name, Math.max(...st.map((x) => x.p50)));
      push(p95s, s.name, Math.max(...st.map((x) => x.p95)));
    }
  }
  return setups.map((s) => `| ${s.name} | ${c} | ${Math.round(median(rates.get(s.name) ?? []))} | ${median(p50s.get(s.name) ?? []).toFixed(1)} | ${median(p95s.get(s.name) ?? []).toFixed(1)} |`);
}

/** Every decision once, in one chain, on each log: what each holds and who recorded it. */
async function verifyLogs(urls: readonly string[], file: string): Promise<string[]> {
  const { openPostgresLog, openStore } = await import("../src/events/index.js");
  const checks: string[] = [];
  for (const [name, url] of [["postgres ×1", urls[0]], ["postgres ×2", urls[1]]] as const) {
    const log = await openPostgresLog({ url: url ?? "", migrate: false });
    const v = await log.verify();
    const actors = new Set((await log.read({ stream: "egress/bench" })).map((e) => e.actor));
    checks.push(`${name}: ${await log.head()} events, chain ${v.ok ? "verified" : "BROKEN"}, recorded by ${[...actors].sort().join(", ")}`);
    await log.close();
  }
  const sqlite = await openStore({ file });
  checks.push(`sqlite ×1: ${await sqlite.head()} events, chain ${(await sqlite.verify()).ok ? "verified" : "BROKEN"}`);
  await sqlite.close();
  return checks;
}

export async function main(): Promise<void> {
  if (arg("--role") === "proxy") return roleProxy();
  const progress = (what: string): void => void process.stderr.write(`[bench] ${what}\n`);
  const { startPostgres } = await import("../test/support/postgres.js");
  const { openPostgresLog, openStore } = await import("../src/events/index.js");
  const upstream = createServer((s) => s.on("error", () => s.destroy()));
  await new Promise<void>((r) => upstream.listen(0, "127.0.0.1", () => r()));
  const upstreamPort = (upstream.address() as AddressInfo).port;
  progress("starting PostgreSQL");
  const pg = await startPostgres();
  const dir = mkdtempSync(join(tmpdir(), "bench-egress-store-"));
  const setups: SetUp[] = [];
  try {
    const urls = [pg.urlFor(pg.createDatabase("one")), pg.urlFor(pg.createDatabase("two"))];
    // The schema made once by its owner (here the superuser), as `openfief store init` does.
    for (const url of urls) await (await openPostgresLog({ url })).close();
    const file = join(dir, "events.db");
    await (await openStore({ file })).close();
    progress("starting the proxies");
    const base = ["--upstream", String(upstreamPort)];
    setups.push({ name: "sqlite ×1", proxies: [await startProxy([...base, "--log", `sqlite:${file}`])] });
    setups.push({ name: "postgres ×1", proxies: [await startProxy([...base, "--log", urls[0] as string])] });
    setups.push({ name: "postgres ×2", proxies: [await startProxy([...base, "--log", urls[1] as string, "--id", "a"]), await startProxy([...base, "--log", urls[1] as string, "--id", "b"])] });
    // Warm-up: every proxy's reviewer cache, DNS cache and connections.
    for (const s of setups) await round(s.proxies, upstreamPort, 200, 8);
    for (const s of setups) for (const p of s.proxies) await stats(p);

    const rows: string[] = [];
    for (const c of CONCURRENCY) rows.push(...await measure(setups, upstreamPort, c, progress));
    const checks = await verifyLogs(urls, file);
    console.log(`bench:egress --store postgres (${CONNECTS} CONNECTs a round, median of ${ROUNDS} rounds; load average at the end ${loadavg()[0]?.toFixed(2)})`);
    console.log("");
    console.log("| log | concurrency | CONNECTs/s | commit p50 ms | commit p95 ms |");
    console.log("| --- | --- | --- | --- | --- |");
    for (const r of rows) console.log(r);
    console.log("");
    for (const c of checks) console.log(c);
  } finally {
    for (const s of setups) for (const p of s.proxies) p.child.disconnect();
    await new Promise((r) => setTimeout(r, 500));
    upstream.close();
    await pg.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] === SELF) await main();
