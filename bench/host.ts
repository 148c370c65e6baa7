/**
 * `npm run bench:host`: the plugin host's costs, beside the limits they approach.
 *
 * Prints: cold start of a module (a sandbox process, compile, first instance) and a whole install;
 * warm call latency p50/p99 of a trivial method and calls/s at 1 and 4 concurrent callers, for a
 * confined module and for the same call through the unconfined tier; and, for reference, the same
 * work as a plain in-process function, the same module called in-process without isolation, and
 * the two message hops a confined call adds (IPC to a child process, postMessage to a worker).
 * Figures, not a timed test: every loop is bounded. `BENCH_CALLS` sets the calls per measurement.
 */
import { fork } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { Worker } from "node:worker_threads";
import { pino } from "pino";
import type { JsonValue } from "../src/plugins/index.js";
import { openStore } from "../src/events/index.js";
import { createPluginHost, type PluginHost } from "../src/host/index.js";
import { checkModule } from "../src/host/module-check.js";
import { DEFAULT_CAPS, DEFAULT_LIMITS } from "../src/host/limits.js";
import { wasm } from "../src/host/wasm-api.js";
import { BODY, guest } from "../test/host/support/wat.js";

const CALLS = Number(process.env.BENCH_CALLS ?? 4000);
const COLD_ROUNDS = Number(process.env.BENCH_COLD_ROUNDS ?? 8);
const ECB = new URL("../plugins/ecb-fx/build/ecb-fx.wasm", import.meta.url);

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
}

function median(xs: number[]): number {
  return quantile([...xs].sort((a, b) => a - b), 0.5);
}

function fmtMs(ms: number): string {
  return ms >= 10 ? `${ms.toFixed(0)} ms` : ms >= 1 ? `${ms.toFixed(2)} ms` : `${(ms * 1000).toFixed(0)} µs`;
}

/** Sequential latencies, then throughput at 1 and 4 concurrent callers. */
async function measure(call: () => Promise<unknown>): Promise<{ p50: number; p99: number; rate1: number; rate4: number }> {
  for (let i = 0; i < 200; i++) await call();
  const lat: number[] = [];
  const t1 = performance.now();
  for (let i = 0; i < CALLS; i++) {
    const s = performance.now();
    await call();
    lat.push(performance.now() - s);
  }
  const rate1 = CALLS / ((performance.now() - t1) / 1000);
  lat.sort((a, b) => a - b);
  let left = CALLS;
  const t4 = performance.now();
  await Promise.all(Array.from({ length: 4 }, async () => {
    while (left-- > 0) await call();
  }));
  const rate4 = CALLS / ((performance.now() - t4) / 1000);
  return { p50: quantile(lat, 0.5), p99: quantile(lat, 0.99), rate1, rate4 };
}

function ok(r: { ok: boolean }): void {
  if (!r.ok) throw new Error(`a benchmark call failed: ${JSON.stringify(r)}`);
}

const UNCONFINED_ECHO = `#!/usr/bin/env node
"use strict";
const rl = require("node:readline").createInterface({ input: process.stdin });
rl.on("line", (line) => {
  const { id, method, params } = JSON.parse(line);
  process.stdout.write(JSON.stringify(method === "abi_version" ? { id, result: 1 } : { id, result: { method, params } }) + "\\n");
});
rl.on("close", () => process.exit(0));
`;

/** The median round trip of `once(msg)` over {@link CALLS} calls, after 200 to warm up. */
async function roundTrips(once: (m: unknown) => Promise<void>, msg: unknown): Promise<number> {
  for (let i = 0; i < 200; i++) await once(msg);
  const lat: number[] = [];
  for (let i = 0; i < CALLS; i++) {
    const s = performance.now();
    await once(msg);
    lat.push(performance.now() - s);
  }
  return median(lat);
}

async function ipcRoundTrip(): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), "bench-ipc-"));
  const file = join(dir, "child.mjs");
  writeFileSync(file, "process.on('message', (m) => process.send(m)); process.on('disconnect', () => process.exit(0));");
  const child = fork(file, [], { serialization: "advanced", execArgv: [], stdio: ["ignore", "ignore", "ignore", "ipc"] });
  const once = (m: unknown) => new Promise<void>((resolve) => { child.once("message", () => resolve()); child.send(m as object); });
  const msg = { t: "call", iid: 1, cid: 1, request: new TextEncoder().encode('{"method":"m","params":{}}'), secrets: [] };
  const lat = await roundTrips(once, msg);
  child.disconnect();
  rmSync(dir, { recursive: true, force: true });
  return lat;
}

async function workerRoundTrip(): Promise<number> {
  const w = new Worker("require('node:worker_threads').parentPort.on('message', (m) => require('node:worker_threads').parentPort.postMessage(m));", { eval: true });
  const once = (m: unknown) => new Promise<void>((resolve) => { w.once("message", () => resolve()); w.postMessage(m); });
  const msg = { t: "call", cid: 1, request: new TextEncoder().encode('{"method":"m","params":{}}'), secrets: [] };
  const lat = await roundTrips(once, msg);
  await w.terminate();
  return lat;
}

type Call = (req: { method: string; params: JsonValue }) => Promise<unknown>;

/** Median cold start and install of each module, as table rows. */
async function coldStarts(host: PluginHost, modules: readonly [string, Uint8Array][]): Promise<string[][]> {
  const rows: string[][] = [];
  for (const [name, bytes] of modules) {
    const installs: number[] = [];
    const prepares: number[] = [];
    for (let i = 0; i < COLD_ROUNDS; i++) {
      const s = performance.now();
      const r = await host.install(bytes);
      installs.push(performance.now() - s);
      if (!r.ok) throw new Error(r.error.message);
      host.evict(r.value.digest);
      const p = performance.now();
      ok(await host.prepare(r.value.digest));
      prepares.push(performance.now() - p);
      host.evict(r.value.digest);
      ok(await host.uninstall(r.value.digest));
    }
    rows.push([name, `${(bytes.length / 1024).toFixed(0)} KiB`, fmtMs(median(prepares)), fmtMs(median(installs))]);
  }
  return rows;
}

/** The same module instantiated in this thread and called directly: no isolation at all. */
async function inProcess(bytes: Uint8Array): Promise<Call> {
  const checked = checkModule(bytes, DEFAULT_LIMITS, DEFAULT_CAPS);
  if (!checked.ok) throw new Error("check");
  const inst = await wasm.instantiate(await wasm.compile(checked.value.bytes), {
    wasi_snapshot_preview1: { fd_write: () => 0, proc_exit: () => undefined },
    openfief: { host_call: () => 0n },
  });
  const ex = inst.exports as { memory: { buffer: ArrayBuffer }; openfief_alloc: (n: number) => number; openfief_call: (p: number, n: number) => bigint };
  return (req) => {
    const request = new TextEncoder().encode(JSON.stringify(req));
    const at = ex.openfief_alloc(request.length);
    new Uint8Array(ex.memory.buffer, at, request.length).set(request);
    const packed = ex.openfief_call(at, request.length);
    const view = new Uint8Array(ex.memory.buffer, Number(packed >> 32n), Number(packed & 0xffffffffn));
    return Promise.resolve(JSON.parse(new TextDecoder().decode(view)) as unknown);
  };
}

/** Warm-call rows: the limits, the confined tier and the unconfined tier. */
async function warmCalls(host: PluginHost, echoBytes: Uint8Array): Promise<string[][]> {
  const params = { batchId: "b-1", watermark: "2026-12-01" };
  const installed = await host.install(echoBytes);
  if (!installed.ok) throw new Error(installed.error.message);
  const unconfined = host.unconfined;
  const [exe] = (await unconfined?.list()) ?? [];
  if (unconfined === null || exe === undefined) throw new Error("no unconfined executable");
  ok(await unconfined.permit(exe.name, exe.digest, "owner:bench"));
  const plain: Call = (req) => Promise.resolve(JSON.parse(`{"result":${JSON.stringify(req)}}`) as unknown);
  const paths: [string, Call][] = [
    ["plain in-process function (same JSON work)", plain],
    ["same module in-process, no isolation", await inProcess(echoBytes)],
    ["confined: host.call (sandbox process + worker)", async (req) => ok(await host.call("bench", installed.value.digest, req))],
    ["unconfined: host.call (NDJSON over stdio)", async (req) => ok(await host.call("bench", exe.digest, req))],
  ];
  const rows: string[][] = [];
  for (const [name, call] of paths) {
    const m = await measure(() => call({ method: "sync", params }));
    rows.push([name, fmtMs(m.p50), fmtMs(m.p99), m.rate1.toFixed(0), m.rate4.toFixed(0)]);
  }
  return rows;
}

function table(head: string[], rows: string[][]): void {
  console.log(`| ${head.join(" | ")} |`);
  console.log(`| ${head.map((_, i) => (i === 0 ? "---" : "---:")).join(" | ")} |`);
  for (const r of rows) console.log(`| ${r.join(" | ")} |`);
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "bench-host-"));
  const store = await openStore({ file: join(dir, "events.db") });
  const unconfinedDir = join(dir, "unconfined");
  mkdirSync(unconfinedDir);
  writeFileSync(join(unconfinedDir, "echo"), UNCONFINED_ECHO);
  chmodSync(join(unconfinedDir, "echo"), 0o755);
  const host = createPluginHost({ store, logger: pino({ level: "silent" }), unconfinedDir, sealedDir: join(dir, "sealed"), summaryIntervalMs: 60_000 });
  try {
    const echoBytes = await guest({ body: BODY.echo });
    const modules: [string, Uint8Array][] = [["WAT echo guest", echoBytes]];
    if (existsSync(ECB)) modules.push(["ecb-fx (AssemblyScript)", new Uint8Array(readFileSync(ECB))]);
    console.log(`cold start (median of ${COLD_ROUNDS}):`);
    table(["module", "size", "cold start: sandbox process + compile + first instance", "install (checks, cold start, manifest call, store)"], await coldStarts(host, modules));
    console.log(`\nwarm calls of a trivial method (${CALLS} calls each; p50/p99 sequential):`);
    table(["path", "p50", "p99", "calls/s, 1 caller", "calls/s, 4 callers"], await warmCalls(host, echoBytes));
    console.log("\nthe hops a confined call adds (median round trip):");
    table(["hop", "round trip"], [
      ["IPC parent ↔ child process (advanced serialization)", fmtMs(await ipcRoundTrip())],
      ["postMessage main ↔ worker thread", fmtMs(await workerRoundTrip())],
    ]);
  } finally {
    await host.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
