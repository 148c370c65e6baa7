#!/usr/bin/env node
// `node bench/cpuprofile.mjs FILE.cpuprofile [top] [marker] [--incl]`: where a CPU profile
// written by `BENCH_CPU_PROFILE_DIR` spent its busy time. Only the window in which `marker`
// (a function name, `onconnection` by default) was sampled counts, so start-up is left out; idle
// samples are dropped and percentages are of the busy time. Self time by function, and with
// `--incl` inclusive time (a function counted once per sample however deep it recurses).
// V8 samples wall time, so a function that wakes another thread or process (postMessage, a
// loopback connect or write) is charged for the moments this thread then waits for a core.
import { readFileSync } from "node:fs";

const [file, topArg = "40", marker = "onconnection"] = process.argv.slice(2).filter((a) => !a.startsWith("--"));
if (file === undefined) {
  console.error("usage: node bench/cpuprofile.mjs FILE.cpuprofile [top] [marker] [--incl]");
  process.exit(2);
}
const top = Number(topArg);
const p = JSON.parse(readFileSync(file, "utf8"));
const byId = new Map(p.nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const name = (n) => {
  const cf = n.callFrame;
  const url = cf.url.startsWith("data:") ? "worker-bundle" : cf.url.replace(/^.*\/(node_modules\/)?/, "");
  return `${cf.functionName || "(anonymous)"} ${url}:${cf.lineNumber + 1}`;
};
const times = [];
let t = p.startTime;
for (let i = 0; i < p.samples.length; i++) times.push((t += p.timeDeltas[i] ?? 0));
const marked = (id) => {
  for (let c = id; c !== undefined; c = parent.get(c)) if (byId.get(c).callFrame.functionName === marker) return true;
  return false;
};
let first = -1;
let last = -1;
for (let i = 0; i < p.samples.length; i++) {
  if (!marked(p.samples[i])) continue;
  if (first < 0) first = i;
  last = i;
}
if (first < 0) [first, last] = [0, p.samples.length - 1];
const self = new Map();
const incl = new Map();
let busy = 0;
let idle = 0;
for (let i = first + 1; i <= last; i++) {
  const d = times[i] - times[i - 1];
  const id = p.samples[i];
  const k = name(byId.get(id));
  if (k.startsWith("(idle)")) {
    idle += d;
    continue;
  }
  busy += d;
  self.set(k, (self.get(k) ?? 0) + d);
  const seen = new Set();
  for (let c = id; c !== undefined; c = parent.get(c)) {
    const kk = name(byId.get(c));
    if (!seen.has(kk)) incl.set(kk, (incl.get(kk) ?? 0) + d);
    seen.add(kk);
  }
}
const fmt = (m) => [...m].sort((a, b) => b[1] - a[1]).slice(0, top)
  .map(([k, v]) => `${((100 * v) / busy).toFixed(1).padStart(5)} %  ${(v / 1000).toFixed(0).padStart(6)} ms  ${k}`).join("\n");
console.log(`window ${((times[last] - times[first]) / 1e6).toFixed(2)} s: busy ${(busy / 1000).toFixed(0)} ms, idle ${(idle / 1000).toFixed(0)} ms`);
console.log("self time\n" + fmt(self));
if (process.argv.includes("--incl")) console.log("inclusive time\n" + fmt(incl));
