#!/usr/bin/env node
// The connector contract's checks (seed 000, "The connector contract"), run by `npm test`:
//   1. `buf lint` with the STANDARD rules in buf.yaml;
//   2. `buf breaking` at FILE level against the previous commit (PROTO_BASE overrides the ref,
//      default HEAD~1). Skipped, with a notice, when there is no such commit (a fresh repository or
//      a shallow clone) or when the contract did not exist in it yet: never a false failure;
//   3. regenerating the TypeScript into a temporary directory must give exactly the committed
//      sdk/src/gen (buf.gen.yaml: the contracts of the SDK) and src/gen (buf.gen.core.yaml: the
//      control plane's own services).
// Only local inputs: buf and protoc-gen-es come from node_modules/.bin.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const bin = join(root, "node_modules", ".bin");
const env = { ...process.env, PATH: `${bin}${delimiter}${process.env.PATH ?? ""}` };
// Each template and the directory it generates into.
const TEMPLATES = [
  { template: "buf.gen.yaml", dir: join("sdk", "src", "gen") },
  { template: "buf.gen.core.yaml", dir: join("src", "gen") },
];

let failed = false;

function run(cmd, args, opts = {}) {
  return spawnSync(cmd, args, { cwd: root, env, encoding: "utf8", ...opts });
}

function step(name, result) {
  if (result.error) {
    console.error(`check-proto: ${name}: ${result.error.message}`);
    failed = true;
    return false;
  }
  if (result.status !== 0) {
    console.error(`check-proto: ${name} failed`);
    process.stderr.write(result.stdout ?? "");
    process.stderr.write(result.stderr ?? "");
    failed = true;
    return false;
  }
  console.log(`check-proto: ${name}: ok`);
  return true;
}

function git(args) {
  return run("git", args);
}

// 1. Lint.
step("buf lint", run("buf", ["lint"]));

// 2. Breaking changes against the previous commit.
function breaking() {
  const ref = process.env.PROTO_BASE || "HEAD~1";
  if (git(["rev-parse", "--is-inside-work-tree"]).status !== 0) {
    console.log("check-proto: buf breaking: skipped (not a git work tree)");
    return;
  }
  if (git(["rev-parse", "--is-shallow-repository"]).stdout?.trim() === "true" && git(["cat-file", "-e", `${ref}^{commit}`]).status !== 0) {
    console.log(`check-proto: buf breaking: skipped (shallow clone without ${ref}; fetch more history to check)`);
    return;
  }
  if (git(["rev-parse", "--verify", "--quiet", `${ref}^{commit}`]).status !== 0) {
    console.log(`check-proto: buf breaking: skipped (no commit ${ref}: nothing to compare with)`);
    return;
  }
  const listed = git(["ls-tree", "-r", "--name-only", ref, "--", "proto"]);
  if (listed.status !== 0 || !/\.proto$/m.test(listed.stdout ?? "")) {
    console.log(`check-proto: buf breaking: skipped (the contract is new since ${ref})`);
    return;
  }
  // Extract the base's proto tree and buf.yaml into a temporary directory: works the same in
  // worktrees and partial clones, where buf's own .git input may not.
  const base = mkdtempSync(join(tmpdir(), "check-proto-base-"));
  try {
    const paths = ["proto"];
    if (git(["cat-file", "-e", `${ref}:buf.yaml`]).status === 0) paths.push("buf.yaml");
    const archive = spawnSync("git", ["archive", "--format=tar", ref, "--", ...paths], { cwd: root, maxBuffer: 64 * 1024 * 1024 });
    const tar = archive.status === 0 ? spawnSync("tar", ["-x", "-C", base], { input: archive.stdout }) : null;
    if (archive.status !== 0 || tar === null || tar.status !== 0) {
      console.log(`check-proto: buf breaking: skipped (could not read ${ref}'s contract from git)`);
      return;
    }
    const against = paths.includes("buf.yaml") ? base : join(base, "proto");
    step(`buf breaking against ${ref}`, run("buf", ["breaking", "--against", against]));
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
}
breaking();

// 3. The committed generated code is what the generator makes now.
function listFiles(dir) {
  const out = [];
  if (!existsSync(dir)) return out;
  const walk = (d) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else out.push(relative(dir, p));
    }
  };
  walk(dir);
  return out.sort();
}

for (const { template, dir: GEN_DIR } of TEMPLATES) {
  const out = mkdtempSync(join(tmpdir(), "check-proto-gen-"));
  try {
    if (step(`buf generate --template ${template} (into a temporary directory)`, run("buf", ["generate", "--template", template, "--output", out]))) {
      const fresh = join(out, GEN_DIR);
      const committed = join(root, GEN_DIR);
      // Only what buf writes (`*_pb.ts`): src/gen also holds code other generators make
      // (config-meta-schemas.js, checked by its own test).
      const byBuf = (f) => /_pb\.ts$/.test(f);
      const a = listFiles(fresh).filter(byBuf);
      const b = listFiles(committed).filter(byBuf);
      const stale = [];
      for (const f of new Set([...a, ...b])) {
        const x = existsSync(join(fresh, f)) ? readFileSync(join(fresh, f)) : null;
        const y = existsSync(join(committed, f)) ? readFileSync(join(committed, f)) : null;
        if (x === null || y === null || !x.equals(y)) stale.push(join(GEN_DIR, f));
      }
      if (stale.length > 0) {
        console.error(`check-proto: generated code is not up to date (run \`npm run gen:proto\`): ${stale.join(", ")}`);
        failed = true;
      } else {
        console.log(`check-proto: ${GEN_DIR} is up to date`);
      }
    }
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}

process.exit(failed ? 1 : 0);
