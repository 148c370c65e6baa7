/**
 * CLI start-up benchmark (`npm run bench:cli`): wall time and CPU of `openfief get plugins`,
 * `why nbp-fx` and `log`, run as a user runs them (`node bin/openfief.js …`), from the bundle
 * `npm ci` builds (dist/openfief.mjs) and from the TypeScript sources through tsx
 * (`OPENFIEF_NO_BUNDLE=1`), beside a bare `node -e 0`. Medians of interleaved runs.
 *
 *   BENCH_RUNS=9 (runs per figure)
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const BIN = join(ROOT, "bin", "openfief.js");
const RUNS = Number(process.env.BENCH_RUNS ?? 9);
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

const commands: [string, string[]][] = [["get plugins", ["get", "plugins"]], ["why nbp-fx", ["why", "nbp-fx"]], ["log", ["log"]]];
const modes: [string, NodeJS.ProcessEnv][] = [["bundle", {}], ["tsx", { OPENFIEF_NO_BUNDLE: "1" }]];
const results = new Map<string, { wall: number[]; cpu: number[] }>();
const add = (key: string, r: { wall: number; cpu: number }) => {
  const e = results.get(key) ?? { wall: [], cpu: [] };
  e.wall.push(r.wall);
  e.cpu.push(r.cpu);
  results.set(key, e);
};
for (let i = 0; i < RUNS; i++) {
  add("node -e 0", once(["-e", "0"]));
  for (const [name, args] of commands) for (const [mode, env] of modes) add(`${name} (${mode})`, once([BIN, ...args, ...data], env));
}
console.log(`\nCLI start-up, median of ${RUNS} interleaved runs (load average ${(await import("node:os")).loadavg()[0]?.toFixed(1)})`);
console.log("| command | wall ms | CPU ms (user + sys) |");
console.log("| --- | ---: | ---: |");
for (const [key, r] of results) console.log(`| ${key} | ${median(r.wall).toFixed(0)} | ${median(r.cpu).toFixed(0)} |`);
rmSync(dir, { recursive: true, force: true });
