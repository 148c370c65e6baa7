#!/usr/bin/env node
// `npm run check:house`: the house's seams, as numbers (issue 12). Prints the casts on event data
// left in src/ outside the adapters that parse stored rows, the imports that go around a room's
// door or against DESIGN.md's arrows, and the lint budget warnings; fails when a cast or a door
// bypass appears, or when the warnings grow past the count the budgets found on the first day.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { ESLint } from "eslint";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
/** Budget warnings on 2026-12-01, before the seams were mended (commit 9ca9db4 with today's budgets). */
const WARNINGS_BEFORE = 45;
/**
 * Files that turn stored rows into typed events: each row was validated against its type's schema
 * when it was appended, so narrowing it to its type there is the one cast the union needs.
 */
const ROW_ADAPTERS = new Set(["src/events/store.ts", "src/events/rows.ts", "src/events/sqlite/rows.ts", "src/events/sqlite/lookups.ts"]);
const CAST = /\.data as\b|\bas (?:unknown as )?(?:StoredEvent|EventOf|KnownEvent)\b/g;

function* sources(dir) {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) {
      if (name !== "gen") yield* sources(p);
    } else if (name.endsWith(".ts") && !name.endsWith(".test.ts")) yield p;
  }
}

const casts = [];
for (const file of sources(join(ROOT, "src"))) {
  const rel = relative(ROOT, file);
  if (ROW_ADAPTERS.has(rel)) continue;
  readFileSync(file, "utf8").split("\n").forEach((line, i) => {
    if (CAST.test(line)) casts.push(`${rel}:${i + 1}: ${line.trim()}`);
    CAST.lastIndex = 0;
  });
}

const eslint = new ESLint({ cwd: ROOT });
const results = await eslint.lintFiles(["src"]);
const doors = [];
const budgets = new Map();
for (const r of results) {
  for (const m of r.messages) {
    if (m.ruleId === "house/doors") doors.push(`${relative(ROOT, r.filePath)}:${m.line}: ${m.message}`);
    else if (m.severity === 1 && m.ruleId !== null) budgets.set(m.ruleId, (budgets.get(m.ruleId) ?? 0) + 1);
  }
}
const warnings = [...budgets.values()].reduce((a, b) => a + b, 0);

console.log(`casts on event data outside the row adapters: ${casts.length}`);
for (const c of casts) console.log(`  ${c}`);
console.log(`imports around a door or against the arrows: ${doors.length}`);
for (const d of doors) console.log(`  ${d}`);
console.log(`lint budget warnings: ${warnings} (${[...budgets].map(([k, v]) => `${k} ${v}`).join(", ") || "none"}); ${WARNINGS_BEFORE} before`);
if (casts.length > 0 || doors.length > 0 || warnings > WARNINGS_BEFORE) {
  console.error("check:house: the seams regressed (see above)");
  process.exit(1);
}
