#!/usr/bin/env node
// Fails when an installed package declares an `engines.node` range that excludes the running
// Node, unless it is listed below with the reason it is known to work. This is how an upgrade to
// a Node-22-only release fails loudly here instead of crashing later (../shared/STACK.md).
import { readdirSync, readFileSync, existsSync } from "node:fs";
import { join } from "node:path";

// Checked on Node 20.20: @sigstore/verify 4.1.x (with bundle 5, core 4) passes every case in
// the Sigstore test data, while 3.1.1 (the last line declaring Node 20) rejects valid Rekor v2 bundles.
const ALLOWED = new Map([
  ["@sigstore/verify", "4.1."],
  ["@sigstore/bundle", "5.0."],
  ["@sigstore/core", "4.0."],
]);

const node = process.versions.node.split(".").map(Number);

function cmp(a, b) {
  for (let i = 0; i < 3; i++) if ((a[i] ?? 0) !== (b[i] ?? 0)) return (a[i] ?? 0) - (b[i] ?? 0);
  return 0;
}
function parse(v) {
  return v.replace(/^v/, "").split(".").map((x) => Number.parseInt(x, 10) || 0);
}
// A small semver-range evaluator for the forms `engines.node` uses: ||, space-separated
// comparators, ^, ~, x-ranges, and hyphen ranges.
function satisfiesComparator(c) {
  c = c.trim();
  if (c === "" || c === "*" || c === "x") return true;
  let m;
  if ((m = /^\^(.+)$/.exec(c))) {
    const v = parse(m[1]);
    const upper = v[0] > 0 ? [v[0] + 1, 0, 0] : v[1] > 0 ? [0, v[1] + 1, 0] : [0, 0, v[2] + 1];
    return cmp(node, v) >= 0 && cmp(node, upper) < 0;
  }
  if ((m = /^~(.+)$/.exec(c))) {
    const v = parse(m[1]);
    return cmp(node, v) >= 0 && cmp(node, [v[0], v[1] + 1, 0]) < 0;
  }
  if ((m = /^(>=|<=|>|<|=)?\s*v?([\d.x*]+)$/.exec(c))) {
    const op = m[1] ?? "=";
    const parts = m[2].split(".");
    const wild = parts.findIndex((p) => p === "x" || p === "*");
    const v = parse(m[2]);
    if (op === "=" && (wild >= 0 || parts.length < 3)) {
      const n = wild >= 0 ? wild : parts.length;
      for (let i = 0; i < n; i++) if (node[i] !== v[i]) return false;
      return true;
    }
    const d = cmp(node, v);
    return op === ">=" ? d >= 0 : op === "<=" ? d <= 0 : op === ">" ? d > 0 : op === "<" ? d < 0 : d === 0;
  }
  return true; // unknown syntax: do not guess a failure
}
function satisfies(range) {
  return range.split("||").some((alt) => {
    const hy = /^\s*([\d.]+)\s+-\s+([\d.]+)\s*$/.exec(alt);
    if (hy) return cmp(node, parse(hy[1])) >= 0 && cmp(node, parse(hy[2])) <= 0;
    return alt.trim().replace(/(>=|<=|>|<|=)\s+/g, "$1").split(/\s+/).every(satisfiesComparator);
  });
}

function* packages(dir) {
  if (!existsSync(dir)) return;
  for (const name of readdirSync(dir)) {
    if (name.startsWith(".")) continue;
    const p = join(dir, name);
    if (name.startsWith("@")) {
      for (const sub of readdirSync(p)) yield* pkg(join(p, sub));
    } else yield* pkg(p);
  }
}
function* pkg(p) {
  const file = join(p, "package.json");
  if (!existsSync(file)) return;
  yield file;
  yield* packages(join(p, "node_modules"));
}

const bad = [];
for (const file of packages("node_modules")) {
  let j;
  try { j = JSON.parse(readFileSync(file, "utf8")); } catch { continue; }
  const range = j.engines?.node;
  if (typeof range !== "string" || satisfies(range)) continue;
  const allowed = ALLOWED.get(j.name);
  if (allowed !== undefined && String(j.version).startsWith(allowed)) continue;
  bad.push(`${j.name}@${j.version} needs node ${range}`);
}
if (bad.length > 0) {
  console.error(`check-engines: ${bad.length} installed package(s) do not support Node ${process.versions.node}:`);
  for (const b of bad) console.error(`  - ${b}`);
  console.error("Pin the last release that supports this Node (../shared/STACK.md), or add it to ALLOWED with the reason.");
  process.exit(1);
}
console.log(`check-engines: every installed package supports Node ${process.versions.node} (or is allowed by name)`);
