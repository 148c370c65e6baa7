/**
 * `npm run bench:console`: how long the owner's HTTP face takes to answer, over real HTTP on
 * 127.0.0.1 with one keep-alive connection, on the demo with a day of history
 * (test/support/console-demo.ts) and on the same log grown by BENCH_EVENTS egress decisions
 * (default 100,000). Prints a Markdown table of medians and 95th percentiles per route.
 */
import { Agent, request } from "node:http";
import { startConsoleDemo } from "../test/support/console-demo.js";

const ROUNDS = Number(process.env["BENCH_ROUNDS"] ?? 200);
const GROW = Number(process.env["BENCH_EVENTS"] ?? 100_000);

const ROUTES: readonly string[] = [
  "/",
  "/plugins/nbp-fx",
  "/log",
  "/egress",
  "/replay?at=50",
  "/integrity",
  "/api/v1/plugins",
  "/api/v1/plugins/nbp-fx",
  "/api/v1/events?limit=100",
  "/api/v1/egress/summary",
];

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
    // The integrity page walks the whole chain: a tenth of the rounds.
    const rounds = route === "/integrity" ? Math.max(5, Math.floor(ROUNDS / 10)) : ROUNDS;
    for (let i = 0; i < 5; i++) await get(base + route, headers);
    const times: number[] = [];
    for (let i = 0; i < rounds; i++) times.push(await get(base + route, headers));
    out.set(route, times);
  }
  return out;
}

const demo = await startConsoleDemo();
try {
  const headers = { authorization: `Bearer ${await demo.token("bench", "viewer")}` };
  const small = await measure(demo.url, headers);
  const smallEvents = demo.cp.runtime.store.head();
  const store = demo.cp.runtime.store;
  for (let done = 0; done < GROW; done += 1000) {
    store.append(Array.from({ length: Math.min(1000, GROW - done) }, (_, i) => ({
      stream: "egress/nbp-fx", type: "egress.decision", actor: "egress",
      data: { plugin: "nbp-fx", host: i % 10 === 0 ? "static.nbp.pl" : "api.nbp.pl", port: 443, allowed: i % 10 !== 0, reason: i % 10 === 0 ? "not_listed" : "listed" },
    })));
  }
  const large = await measure(demo.url, headers);
  console.log(`Console and API over HTTP on 127.0.0.1, one keep-alive connection, ${ROUNDS} requests per route (integrity: ${Math.max(5, Math.floor(ROUNDS / 10))})`);
  console.log(`| route | demo (${smallEvents} events): median | p95 | grown (${store.head()} events): median | p95 |`);
  console.log("| --- | ---: | ---: | ---: | ---: |");
  for (const route of ROUTES) {
    const a = small.get(route) ?? [];
    const b = large.get(route) ?? [];
    console.log(`| \`${route}\` | ${quantile(a, 0.5).toFixed(2)} ms | ${quantile(a, 0.95).toFixed(2)} ms | ${quantile(b, 0.5).toFixed(2)} ms | ${quantile(b, 0.95).toFixed(2)} ms |`);
  }
} finally {
  agent.destroy();
  await demo.stop();
}
