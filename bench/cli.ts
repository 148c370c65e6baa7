/**
 * CLI start-up benchmark (`npm run bench:cli`): wall time and CPU of every command the README
 * shows (`get plugins`, `why nbp-fx`, `log`, `log --plugin`, `replay`, `verify-log`,
 * `check-decisions`, `apply`, `--help`, `--version`) run as a user
 * runs them (`node bin/openfief.js …`, a new process each time) from the bundle `npm ci` builds
 * (dist/openfief.mjs), beside a bare `node -e 0` in the same rounds, each figure also as a ratio
 * to it. The targets: every read command within 2 × `node -e 0` (ADR 0113); the audit,
 * `check-decisions`, which re-runs every schema check the log's decisions made, within 3 × (ADR
 * 0201). Medians of interleaved runs: round 1 of everything, then round 2, so a burst of load
 * elsewhere falls on all of them.
 *
 *   BENCH_RUNS=9                     runs per figure
 *   BENCH_TSX=1                      also from the sources through tsx (OPENFIEF_NO_BUNDLE=1)
 *   BENCH_BASELINE=<checkout>        also another checkout's bundle, on the same data, as "baseline"
 *                                    (`git archive <commit> | tar -x -C DIR`, a node_modules link,
 *                                    `node scripts/build-cli.mjs` there)
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const BIN = join(ROOT, "bin", "openfief.js");
const RUNS = Number(process.env["BENCH_RUNS"] ?? 9);
const BASELINE = process.env["BENCH_BASELINE"];
const dir = mkdtempSync(join(tmpdir(), "openfief-bench-cli-"));
const data = ["--data", join(dir, "data")];

const median = (xs: number[]): number => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)] ?? NaN; };

function once(args: readonly string[], env: NodeJS.ProcessEnv = {}): { wall: number; cpu: number } {
  const t0 = process.hrtime.bigint();
  const r = spawnSync("/usr/bin/time", ["-f", "%U %S", process.execPath, ...args], { cwd: ROOT, env: { ...process.env, ...env }, encoding: "utf8" });
  const wall = Number(process.hrtime.bigint() - t0) / 1e6;
  const [user, sys] = (r.stderr.trim().split("\n").at(-1) ?? "0 0").split(" ").map(Number);
  if (r.status !== 0) throw new Error(`${args.join(" ")} failed: ${r.stderr}`);
  return { wall, cpu: ((user ?? 0) + (sys ?? 0)) * 1000 };
}

spawnSync(process.execPath, [join(ROOT, "scripts", "build-cli.mjs")], { cwd: ROOT, stdio: "inherit" });
once([BIN, "apply", "-f", join(ROOT, "examples", "plugins"), ...data]);
once([BIN, "reconcile", ...data, "--oci-layout", join(ROOT, "examples", "oci"), "--trusted-signers", join(ROOT, "examples", "trusted-signers.json")]);

/** Every command the README shows, the read commands first; `apply` applies what is already applied (it records nothing). */
const commands: [string, string[], "read" | "audit" | "other"][] = [
  ["get plugins", ["get", "plugins"], "read"],
  ["why nbp-fx", ["why", "nbp-fx"], "read"],
  ["log", ["log"], "read"],
  ["log --plugin nbp-fx", ["log", "--plugin", "nbp-fx"], "read"],
  ["replay --at 10", ["replay", "--at", "10"], "read"],
  ["verify-log", ["verify-log"], "read"],
  ["check-decisions", ["check-decisions"], "audit"],
  ["apply -f examples/plugins", ["apply", "-f", join(ROOT, "examples", "plugins")], "other"],
  ["--help", ["--help"], "other"],
  ["--version", ["--version"], "other"],
];
const modes: [string, string, NodeJS.ProcessEnv][] = [["bundle", BIN, { OPENFIEF_BUNDLE: "required" }]];
if (BASELINE !== undefined) modes.push(["baseline", join(resolve(BASELINE), "bin", "openfief.js"), { OPENFIEF_BUNDLE: "required" }]);
if (process.env["BENCH_TSX"] === "1") modes.push(["tsx", BIN, { OPENFIEF_NO_BUNDLE: "1" }]);

const results = new Map<string, { wall: number[]; cpu: number[] }>();
const add = (key: string, r: { wall: number; cpu: number }) => {
  const e = results.get(key) ?? { wall: [], cpu: [] };
  e.wall.push(r.wall);
  e.cpu.push(r.cpu);
  results.set(key, e);
};
const loadBefore = loadavg()[0] ?? NaN;
for (let i = 0; i < RUNS; i++) {
  add("node -e 0", once(["-e", "0"]));
  for (const [name, args] of commands) {
    // --help and --version take no data folder.
    const rest = args[0]?.startsWith("--") === true ? [] : data;
    for (const [mode, bin, env] of modes) add(`${name} (${mode})`, once([bin, ...args, ...rest], env));
  }
}
const base = results.get("node -e 0") as { wall: number[]; cpu: number[] };
const baseWall = median(base.wall);
const baseCpu = median(base.cpu);
console.log(`\nCLI start-up, median of ${RUNS} interleaved runs (load average ${loadBefore.toFixed(1)} at the start, ${(loadavg()[0] ?? NaN).toFixed(1)} at the end)`);
console.log("| command | wall ms | × node -e 0 | CPU ms (user + sys) | × node -e 0 |");
console.log("| --- | ---: | ---: | ---: | ---: |");
for (const [key, r] of results) {
  const wall = median(r.wall);
  const cpu = median(r.cpu);
  console.log(`| ${key} | ${wall.toFixed(0)} | ${(wall / baseWall).toFixed(2)} | ${cpu.toFixed(0)} | ${(cpu / baseCpu).toFixed(2)} |`);
}
/** The commands of `kind` from the bundle whose median (wall or CPU) is over `times` × node -e 0's. */
const overTarget = (kind: "read" | "audit", times: number, what: "wall" | "cpu"): string[] => {
  const names = new Set(commands.filter(([, , k]) => k === kind).map(([name]) => `${name} (bundle)`));
  const base = what === "wall" ? baseWall : baseCpu;
  return [...results].filter(([key, r]) => names.has(key) && median(r[what]) > times * base).map(([key]) => key);
};
// The targets are in wall time, what a person waits for; CPU is shown beside it because on a
// loaded machine wall time compresses every ratio towards 1.
console.log();
for (const [kind, times, label] of [["read", 2, "read command"], ["audit", 3, "audit"]] as const) {
  const over = overTarget(kind, times, "wall");
  console.log(over.length === 0 ? `Target met: every ${label} from the bundle is within ${times} × node -e 0 (wall).` : `Target missed: over ${times} × node -e 0 (wall), the ${label} target: ${over.join(", ")}.`);
  const overCpu = overTarget(kind, times, "cpu");
  if (overCpu.length > 0) console.log(`  In CPU (not the target), over ${times} ×: ${overCpu.join(", ")}.`);
}
rmSync(dir, { recursive: true, force: true });
