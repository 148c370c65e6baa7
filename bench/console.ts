/**
 * `npm run bench:console [-- SIZE]`: how long the owner's HTTP face takes to answer, over real HTTP
 * on 127.0.0.1 with one keep-alive connection, on the demo with a day of history
 * (test/support/console-demo.ts) and on the same log grown to SIZE events (default 100,000;
 * `1e6` works) by the egress proxy's decisions over the last day. Prints a Markdown table of
 * medians and 95th percentiles per route, and which routes miss the target (100 ms at the 95th).
 *
 *   BENCH_ROUNDS=200 (requests per route)   BENCH_EVENTS=SIZE (when no argument is given)
 *
 * The log grows through a second connection to the store with its own clock (so the decisions
 * spread over the day, as a proxy's would) in transactions of 10,000, each announced to the running
 * control plane as the egress writer thread announces its own; the projections the pages read then
 * catch up in the background, and the figures are taken once they have.
 */
import { Agent, request } from "node:http";
import { storeFile } from "../src/app/data-dir.js";
import { openStore } from "../src/events/index.js";
import type { NewEvent } from "../src/events/index.js";
import { decisionCheck, egressCounts } from "../src/projections/index.js";
import { startConsoleDemo } from "../test/support/console-demo.js";

const ROUNDS = Number(process.env["BENCH_ROUNDS"] ?? 200);
const SIZE = Number(process.argv[2] ?? process.env["BENCH_EVENTS"] ?? 100_000);
const TARGET_MS = 100;
const BATCH = 10_000;

/** Every page and every GET route of the API, but the two that walk the whole log on purpose. */
const ROUTES: readonly string[] = [
  "/",
  "/plugins/nbp-fx",
  "/log",
  "/egress",
  "/egress?window=1h",
  "/egress?window=30d",
  "/replay?at=50",
  "/integrity",
  "/api/v1/plugins",
  "/api/v1/plugins/nbp-fx",
  "/api/v1/plugins/nbp-fx/timeline?egress=true",
  "/api/v1/plugins/nbp-fx/why",
  "/api/v1/pending",
  "/api/v1/events?limit=100",
  "/api/v1/replay?at=50",
  "/api/v1/egress/decisions?plugin=nbp-fx&outcome=refused",
  "/api/v1/egress/summary",
  "/api/v1/session",
];
/** Walk the whole log by definition (`verify-log`, `check-decisions`): timed once each, not held to the target. */
const FULL_WALKS: readonly string[] = ["/api/v1/verify-log", "/api/v1/check-decisions"];

const agent = new Agent({ keepAlive: true, maxSockets: 1 });

function get(url: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const req = request(url, { agent, headers }, (res) => {
      res.resume();
      res.on("end", () => {
        if (res.statusCode !== 200) reject(new Error(`${url}: ${res.statusCode}`));
        else resolve(Number(process.hrtime.bigint() - started) / 1e6);
      });
    });
    req.on("error", reject);
    req.end();
  });
}

function quantile(xs: readonly number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? NaN;
}

async function measure(base: string, headers: Record<string, string>): Promise<Map<string, number[]>> {
  const out = new Map<string, number[]>();
  for (const route of ROUTES) {
    for (let i = 0; i < 5; i++) await get(base + route, headers);
    const times: number[] = [];
    for (let i = 0; i < ROUNDS; i++) times.push(await get(base + route, headers));
    out.set(route, times);
  }
  return out;
}

/** The proxy's decisions for the demo's plugins: nbp-fx's rates and refusals, ecb-fx, ledger-view's telemetry. */
function decision(i: number): NewEvent {
  const d = i % 20 === 0 ? { plugin: "ledger-view", host: "telemetry.vendor.example", allowed: false }
    : i % 10 === 0 ? { plugin: "nbp-fx", host: "static.nbp.pl", allowed: false }
      : i % 7 === 0 ? { plugin: "ecb-fx", host: "www.ecb.europa.eu", allowed: true }
        : { plugin: "nbp-fx", host: "api.nbp.pl", allowed: true };
  const data = d.allowed
    ? { plugin: d.plugin, host: d.host, port: 443, allowed: true, reason: "listed", rules: 1, address: "93.184.215.14", addresses: ["93.184.215.14"] }
    : { plugin: d.plugin, host: d.host, port: 443, allowed: false, reason: "not_listed", rules: 1 };
  return { stream: `egress/${d.plugin}`, type: "egress.decision", actor: "egress", data };
}

const demo = await startConsoleDemo();
try {
  const headers = { authorization: `Bearer ${await demo.token("bench", "viewer")}` };
  const small = await measure(demo.url, headers);
  const store = demo.cp.runtime.store;
  const smallEvents = await store.head();
  const grown = Date.now();
  const end = Date.now();
  const start = end - 24 * 3_600_000;
  const batches = Math.ceil(Math.max(0, SIZE - smallEvents) / BATCH);
  let at = start;
  const writer = await openStore({ file: storeFile(demo.dir), clock: () => new Date(at) });
  try {
    for (let b = 0; b < batches; b++) {
      at = start + Math.floor(((b + 1) * (end - start)) / (batches + 1));
      const n = Math.min(BATCH, SIZE - await store.head());
      store.announce(await writer.append(Array.from({ length: n }, (_, i) => decision(b * BATCH + i))));
      // Let the control plane serve and catch up between transactions, as it would between the proxy's.
      await new Promise((resolve) => setImmediate(resolve));
    }
  } finally {
    await writer.close();
  }
  const appendedS = (Date.now() - grown) / 1000;
  // The figures are the steady state: once the pages' projections and the chain walk reached the head.
  const head = await store.head();
  while ((await egressCounts(store).checkpoint()) < head || (await decisionCheck(store).checkpoint()) < head || ((await store.verifiedPoint())?.seq ?? 0) < head) {
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  const caughtUpS = (Date.now() - grown) / 1000 - appendedS;
  const large = await measure(demo.url, headers);
  const walks = new Map<string, number>();
  for (const route of FULL_WALKS) walks.set(route, await get(demo.url + route, headers));
  console.log(`Console and API over HTTP on 127.0.0.1, one keep-alive connection, ${ROUNDS} requests per route after 5 warm-ups`);
  console.log(`Grown from ${smallEvents} to ${head} events: appended in ${appendedS.toFixed(1)} s, projections and chain walk caught up ${caughtUpS.toFixed(1)} s later`);
  console.log(`| route | demo (${smallEvents} events): median | p95 | grown (${head} events): median | p95 |`);
  console.log("| --- | ---: | ---: | ---: | ---: |");
  const missed: string[] = [];
  for (const route of ROUTES) {
    const a = small.get(route) ?? [];
    const b = large.get(route) ?? [];
    if (quantile(b, 0.95) > TARGET_MS) missed.push(route);
    console.log(`| \`${route}\` | ${quantile(a, 0.5).toFixed(2)} ms | ${quantile(a, 0.95).toFixed(2)} ms | ${quantile(b, 0.5).toFixed(2)} ms | ${quantile(b, 0.95).toFixed(2)} ms |`);
  }
  for (const [route, ms] of walks) console.log(`| \`${route}\` (the whole log, once) | | | ${ms.toFixed(0)} ms | |`);
  console.log(missed.length === 0 ? `\nEvery route within ${TARGET_MS} ms at the 95th percentile.` : `\nOver ${TARGET_MS} ms at the 95th percentile: ${missed.join(", ")}`);
} finally {
  agent.destroy();
  await demo.stop();
}
