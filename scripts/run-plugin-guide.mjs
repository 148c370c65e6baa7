#!/usr/bin/env node
// Runs every shell block of docs/plugin-authors.md, in order, as written, so the guide cannot
// drift from what works (`npm run docs:guide`). Two lines are adapted, and only these: the clone
// is this checkout, and `openfief up` (which runs until stopped) starts in the background and is
// stopped at the end, with the registry. The guide's home is a fresh temporary folder, and the
// demo's data folder one inside it, so nothing of yours is touched. Needs the npm registry (the
// guide installs AssemblyScript), `openssl`, `jq`, `docker-registry`, and the ports the demo
// uses (4750, 4780-4782) and 5000 free. Not part of `npm test`, which reaches no network.
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const guide = readFileSync(join(ROOT, "docs", "plugin-authors.md"), "utf8");
const blocks = [...guide.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]);
const home = mkdtempSync(join(tmpdir(), "openfief-guide-"));

let clone = 0;
let up = 0;
const adapted = blocks.map((block) =>
  block
    .split("\n")
    .map((line) => {
      if (line.startsWith("export OPENFIEF=")) return clone++, `export OPENFIEF=${JSON.stringify(ROOT)}`;
      if (line.startsWith("export OPENFIEF_DATA=")) return `export OPENFIEF_DATA=${JSON.stringify(join(home, "demo-data"))}`;
      if (line.startsWith("openfief up ")) return up++, `(${line} > "$HOME/up.out" 2>&1 &); for i in $(seq 1 120); do grep -q "openfief is up" "$HOME/up.out" && break; sleep 1; done; grep -q "openfief is up" "$HOME/up.out"`;
      return line;
    })
    .join("\n"),
);
if (clone !== 1 || up !== 1) throw new Error(`the guide should set OPENFIEF once and start openfief up once (found ${clone} and ${up})`);

const script = ["set -euo pipefail", `export HOME=${JSON.stringify(home)}`, 'cd "$HOME"', ...adapted.map((b, i) => `echo "--- block ${i + 1} of ${adapted.length}"\n${b}`), 'echo "--- every block ran"'].join("\n");
writeFileSync(join(home, "guide.sh"), script);

const child = spawn("bash", [join(home, "guide.sh")], { stdio: "inherit", detached: true });
const code = await new Promise((resolve) => child.on("exit", (c) => resolve(c ?? 1)));
// The demo and the registry the guide started run in the script's process group.
try {
  process.kill(-child.pid, "SIGINT");
  await new Promise((r) => setTimeout(r, 5000));
  process.kill(-child.pid, "SIGKILL");
} catch {
  // already gone
}
rmSync(home, { recursive: true, force: true });
console.log(code === 0 ? "run-plugin-guide: every command of docs/plugin-authors.md ran" : `run-plugin-guide: a command failed (exit ${code})`);
process.exit(code);
