#!/usr/bin/env node
// Compiles the `openfief` command once into dist/openfief.mjs (ESM, split into chunks so what only
// one command needs loads only for it), its dependencies bundled in too: loading hundreds of small
// CommonJS files costs a command more than its work (ADR 0008). Left out: the native SQLite
// binding (loaded by path), the Kubernetes client (loaded only in cluster mode), and the compilers tsx and esbuild.
// `npm ci` runs it (the `prepare` script); bin/openfief.js uses the bundle when it is newer than
// every source file the command asked for was built from (dist/sources.json lists them) and falls
// back to tsx otherwise.
//
// A command loads only what it uses (ADR 0113): each command module is loaded by its own import()
// (src/cli/commands/index.ts), the bundle looks through the rooms' doors (look-through-doors.mjs),
// commander's child_process is loaded only if commander ever spawns, and better-sqlite3's JavaScript is
// bundled with its binding loaded by path. Any warning fails the build.
// The plugin sandbox (src/host/sandbox/) runs in processes and threads of its own, started from a
// file: it is emitted beside the bundle (dist/sandbox/), one self-contained file per entry, so the
// bundle never reaches back into the source tree.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { lookThroughDoors } from "./look-through-doors.mjs";

const ROOT = fileURLToPath(new URL("..", import.meta.url));

/** commander's `require("node:child_process")`, answered by a stand-in that loads it on first use. */
const lazyChildProcess = {
  name: "lazy-child-process",
  setup(b) {
    b.onResolve({ filter: /^(node:)?child_process$/ }, (args) =>
      /[\\/]node_modules[\\/]commander[\\/]/.test(args.importer) ? { path: `${ROOT}scripts/lazy-child-process.cjs` } : undefined,
    );
  },
};

/**
 * better-sqlite3's JavaScript bundled in, its native binding loaded by path
 * (scripts/bundled-better-sqlite3.cjs, ADR 0200): from node_modules, its CommonJS files were each
 * resolved, read and compiled apart, and `bindings` searched a dozen paths for the binding, which
 * every command that opens the log paid at start-up. `bindings` itself stays out of the bundle: it
 * is required only when build/Release holds no binding.
 */
const bundledBetterSqlite = {
  name: "bundled-better-sqlite3",
  setup(b) {
    b.onResolve({ filter: /^better-sqlite3$/ }, (args) =>
      /[\\/]scripts[\\/]bundled-better-sqlite3\.cjs$/.test(args.importer) ? undefined : { path: `${ROOT}scripts/bundled-better-sqlite3.cjs` },
    );
  },
};

/**
 * The command modules and the subcommands each registers, as src/cli/commands/index.ts lists them
 * (`{ names: [...], load: … import("./m.js") }`; test/cli/start-up.test.ts checks the two agree).
 */
export function commandModules() {
  const text = readFileSync(`${ROOT}src/cli/commands/index.ts`, "utf8");
  const modules = [...text.matchAll(/names:\s*\[([^\]]*)\][^\n]*?import\("\.\/([a-z-]+)\.js"\)/g)].map((m) => ({
    module: m[2],
    names: [...m[1].matchAll(/"([a-z-]+)"/g)].map((n) => n[1]),
  }));
  if (modules.length === 0) throw new Error("build-cli: no command module found in src/cli/commands/index.ts");
  return modules;
}

/**
 * Which module each subcommand is in, and for each module (and for the full help, `all`) every
 * source file its chunks were built from, following static and dynamic imports: what
 * bin/openfief.js checks before it trusts the bundle. The paths are listed once (`files`), each
 * module's sources as indices into them.
 */
function sourcesIndex(metafile, modules) {
  const outputs = metafile.outputs;
  const chunkOf = (entry) => Object.keys(outputs).find((o) => outputs[o].entryPoint === entry);
  const commandChunks = new Map(modules.map((m) => [m.module, chunkOf(`src/cli/commands/${m.module}.ts`)]));
  /** The sources of the chunks `own` (a command module, every one, or null: none) loads from main on, statically or by import(). */
  const reach = (own) => {
    const seen = new Set();
    const todo = [chunkOf("src/cli/main.ts")];
    while (todo.length > 0) {
      const o = todo.pop();
      if (seen.has(o)) continue;
      seen.add(o);
      for (const i of outputs[o]?.imports ?? []) {
        const other = [...commandChunks].some(([m, chunk]) => chunk === i.path && m !== own);
        if (!i.external && outputs[i.path] !== undefined && (own === "all" || !other)) todo.push(i.path);
      }
    }
    return [...new Set([...seen].flatMap((o) => Object.keys(outputs[o].inputs)).filter((p) => /^(src|migrations)\//.test(p)))].sort();
  };
  // `entry`: what the entry loads without any command module (`--version`).
  const lists = { ...Object.fromEntries(modules.map((m) => [m.module, reach(m.module)])), all: reach("all"), entry: reach(null) };
  // Each path once, each module's list as indices into them: the launcher reads this file at every
  // start, and parsing the paths written out per module (136 KB) took it about 3 ms (ADR 0200).
  const files = [...new Set(Object.values(lists).flat())].sort();
  const at = new Map(files.map((f, i) => [f, i]));
  return {
    commands: Object.fromEntries(modules.flatMap((m) => m.names.map((n) => [n, m.module]))),
    files,
    sources: Object.fromEntries(Object.entries(lists).map(([m, list]) => [m, list.map((f) => at.get(f))])),
  };
}

/**
 * Node's built-in modules taken with require() rather than import, in every file of the bundle
 * (ADR 0200). Importing a built-in as ESM makes Node build a module namespace of all its exports,
 * reading each getter: `import { readFileSync } from "node:fs"` loads fs/promises, and with it
 * readline and the streams, which no read command uses (about 3 ms of every start). require()
 * reads only the names asked for. Statements keep their lines, so the source maps hold. A file
 * in a cycle of imports keeps its imports: there, another file could call into it before its
 * requires ran.
 */
const BUILTIN_IMPORT = /^import\s+((?:[A-Za-z_$][\w$]*\s*,\s*)?(?:\{[^}]*\}|\*\s+as\s+[A-Za-z_$][\w$]*|[A-Za-z_$][\w$]*))\s+from\s+"(node:[a-z0-9_/]+)";|^import\s+"(node:[a-z0-9_/]+)";/gm;

/** The same statement as require()s, on as many lines, or null when it has a form not handled here. */
function requireStatement(clause, builtin) {
  const at = JSON.stringify(builtin);
  const parts = [];
  const named = /\{([^}]*)\}/.exec(clause);
  const head = clause.replace(/\{[^}]*\}/, "").replace(/,\s*$/, "").trim();
  if (head.startsWith("*")) parts.push(`const ${head.replace(/^\*\s+as\s+/, "")} = require(${at});`);
  else if (head !== "") parts.push(`const ${head} = require(${at});`);
  if (named !== null) {
    const names = named[1].split(",").map((n) => n.trim()).filter((n) => n !== "");
    if (names.some((n) => /^default\b/.test(n))) return null;
    parts.push(`const { ${names.map((n) => n.replace(/\s+as\s+/, ": ")).join(", ")} } = require(${at});`);
  }
  return parts.join(" ");
}

/** The output files `outputs` reaches from `starts` by static imports, `starts` included. */
function staticClosure(outputs, starts) {
  const seen = new Set();
  const todo = [...starts];
  while (todo.length > 0) {
    const o = todo.pop();
    if (o === undefined || seen.has(o)) continue;
    seen.add(o);
    for (const i of outputs[o]?.imports ?? []) if (i.kind === "import-statement" && !i.external && outputs[i.path] !== undefined) todo.push(i.path);
  }
  return seen;
}

/** Rewrites the static imports of built-ins in the bundle's files outside import cycles; returns how many. */
function requireBuiltins(metafile) {
  const outputs = metafile.outputs;
  const files = Object.keys(outputs).filter((o) => o.endsWith(".mjs"));
  // A file on a cycle of static imports reaches itself through one of its imports.
  const onCycle = (file) => staticClosure(outputs, (outputs[file]?.imports ?? []).filter((i) => i.kind === "import-statement" && !i.external).map((i) => i.path)).has(file);
  let count = 0;
  for (const file of files) {
    if (onCycle(file)) continue;
    const path = resolve(ROOT, file);
    const text = readFileSync(path, "utf8");
    const out = text.replace(BUILTIN_IMPORT, (all, clause, builtin, bare) => {
      const statement = bare !== undefined ? `require(${JSON.stringify(bare)});` : requireStatement(clause, builtin);
      if (statement === null) return all;
      count++;
      return statement + "\n".repeat(all.split("\n").length - 1);
    });
    if (out !== text) writeFileSync(path, out);
  }
  return count;
}

/**
 * The command modules whose chunks load as one file each (ADR 0200), in order: the read commands,
 * then the checks `verify-log` and `check-decisions` load past them.
 */
const READ_PATH = [
  ["src/cli/commands/get.ts", "src/cli/commands/why.ts", "src/cli/commands/log.ts"],
  ["src/cli/commands/log-checks.ts"],
];

/**
 * The chunks of the first pass put together in fewer files (ADR 0200). esbuild gives each set of
 * entries (the program and every module loaded by import()) that share code a chunk of its own,
 * so a read command loaded about 30 files, and Node pays per ES module it links. Groups of chunks
 * are merged: what the program loads before any command (but its own file), what the read
 * commands load past that, and what the log's checks load past those. A second esbuild pass over
 * the first one's files adds, to each file that imports a chunk of a group from outside it, an
 * import of the whole group: every entry that reaches one of its chunks then reaches all, and
 * esbuild puts them in one file. A command outside the read path that used part of a group loads
 * all of it, which it mostly did anyway.
 * Returns the groups (sets of first-pass output paths).
 */
function chunkGroups(meta1) {
  const outputs = meta1.outputs;
  const outputOf = (entry) => Object.keys(outputs).find((o) => outputs[o].entryPoint === entry);
  const closure = (starts) => staticClosure(outputs, starts);
  const main = outputOf("src/cli/main.ts");
  const program = closure([main]);
  const taken = new Set(program);
  const groups = [];
  for (const modules of READ_PATH) {
    const entries = modules.map(outputOf).filter((o) => o !== undefined);
    const group = new Set([...closure(entries)].filter((o) => !taken.has(o) && !entries.includes(o)));
    for (const o of group) taken.add(o);
    groups.push(group);
  }
  program.delete(main);
  return [program, ...groups].filter((g) => g.size > 1);
}

/** The line esbuild writes before each module's code in the bundle, naming the module (tests read it). */
const SOURCE_MARKER = /^\/\/ (\S+\.[cm]?[jt]sx?)$/gm;
const KEPT_MARKER = /^\/\/! (\S+\.[cm]?[jt]sx?)$/gm;

/** What both of the CLI's bundling passes share: ES modules for Node 20, split into chunks, the same packages left out. */
const CLI_BUNDLE = {
  chunkNames: "chunks/[name]-[hash]",
  outExtension: { ".js": ".mjs" },
  splitting: true,
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  external: ["bindings", "@kubernetes/client-node", "esbuild", "tsx", "tsx/*"],
};

/** The second pass: the first pass's files (in `from`) bundled again into `outdir`, each group of {@link chunkGroups} as one file. */
async function mergeChunks(meta1, from, outdir) {
  const groups = chunkGroups(meta1);
  const abs = (o) => resolve(ROOT, o);
  const groupOf = new Map(groups.flatMap((g, n) => [...g].map((o) => [abs(o), n])));
  const importsOf = new Map(Object.entries(meta1.outputs).map(([o, v]) => [abs(o), v.imports.filter((i) => i.kind === "import-statement" && !i.external).map((i) => abs(i.path))]));
  const glue = {
    name: "chunk-groups",
    setup(b) {
      b.onResolve({ filter: /^openfief-chunk-group:\d+$/ }, (args) => ({ path: args.path, namespace: "chunk-group" }));
      b.onLoad({ filter: /.*/, namespace: "chunk-group" }, (args) => {
        const n = Number(args.path.split(":")[1]);
        return { contents: [...groups[n]].map((o) => `import ${JSON.stringify(abs(o))};`).join("\n"), loader: "js", resolveDir: ROOT };
      });
      b.onLoad({ filter: /\.mjs$/ }, (args) => {
        const own = groupOf.get(args.path);
        const reached = new Set((importsOf.get(args.path) ?? []).map((i) => groupOf.get(i)).filter((n) => n !== undefined && n !== own));
        // esbuild's `// path` line before each module's code, kept through the pass as a legal comment.
        const text = readFileSync(args.path, "utf8").replace(SOURCE_MARKER, "//! $1");
        // On the first line, so the file's own source map still fits.
        return { contents: [...reached].map((n) => `import "openfief-chunk-group:${n}";`).join(" ") + text, loader: "js" };
      });
    },
  };
  const result = await build({
    entryPoints: { openfief: `${from}/openfief.mjs` },
    outdir,
    absWorkingDir: ROOT,
    ...CLI_BUNDLE,
    sourcemap: "linked",
    logLevel: "warning",
    legalComments: "inline",
    metafile: true,
    plugins: [glue],
  });
  if (result.warnings.length > 0) throw new Error(`build-cli: ${result.warnings.length} warning(s) merging chunks; the bundle is refused`);
  for (const o of Object.keys(result.metafile.outputs).filter((f) => f.endsWith(".mjs"))) {
    const path = resolve(ROOT, o);
    writeFileSync(path, readFileSync(path, "utf8").replace(KEPT_MARKER, "// $1"));
  }
  // The metafile in terms of the sources: each file's inputs are its first-pass files' inputs.
  /** @type {import("esbuild").Metafile["outputs"]} */
  const outputs = {};
  for (const [o, v] of Object.entries(result.metafile.outputs)) {
    const inputs = {};
    for (const f of Object.keys(v.inputs)) Object.assign(inputs, meta1.outputs[f]?.inputs ?? {});
    const entryPoint = v.entryPoint === undefined ? undefined : meta1.outputs[v.entryPoint]?.entryPoint;
    outputs[o] = { ...v, inputs, ...(entryPoint === undefined ? {} : { entryPoint }) };
    if (entryPoint === undefined) delete outputs[o].entryPoint;
  }
  return { inputs: meta1.inputs, outputs };
}

/**
 * Builds the bundle into `outdir` (dist/ unless told), writes `sources.json` beside it, and returns
 * esbuild's metafile: which chunks each entry loads and what they hold (test/cli/start-up.test.ts
 * reads it).
 */
export async function buildCli(outdir = `${ROOT}dist`) {
  const modules = commandModules();
  mkdirSync(outdir, { recursive: true });
  // The sandbox first: a bundle newer than the sources is only used with its sandbox in place.
  // Chunk names carry a hash: without the clean, every build would leave the last one's behind.
  for (const old of ["sandbox", "chunks"]) rmSync(`${outdir}/${old}`, { recursive: true, force: true });
  await build({
    entryPoints: [`${ROOT}src/host/sandbox/sandbox.js`, `${ROOT}src/host/sandbox/instance.js`],
    outdir: `${outdir}/sandbox`,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    logLevel: "warning",
    legalComments: "none",
  });
  // The first pass writes beside the bundle; the second (mergeChunks) reads it and writes the bundle.
  const pass1 = `${outdir}/.pass1`;
  rmSync(pass1, { recursive: true, force: true });
  const result = await build({
    entryPoints: [`${ROOT}src/cli/main.ts`],
    outdir: pass1,
    // Paths in the metafile, and so in sources.json, relative to the repository.
    absWorkingDir: ROOT,
    entryNames: "openfief",
    ...CLI_BUNDLE,
    // Bundled CommonJS code calls require(): give the ESM bundle one.
    banner: { js: "import { createRequire as __openfiefRequire } from 'node:module'; const require = __openfiefRequire(import.meta.url);" },
    sourcemap: "linked",
    logLevel: "warning",
    legalComments: "none",
    metafile: true,
    plugins: [lookThroughDoors(`${ROOT}src`), lazyChildProcess, bundledBetterSqlite],
  });
  if (result.warnings.length > 0) throw new Error(`build-cli: ${result.warnings.length} warning(s); fix them, the bundle is refused`);
  requireBuiltins(result.metafile);
  for (const old of ["openfief.mjs", "openfief.mjs.map"]) rmSync(`${outdir}/${old}`, { force: true });
  const meta = await mergeChunks(result.metafile, pass1, outdir);
  rmSync(pass1, { recursive: true, force: true });
  writeFileSync(`${outdir}/sources.json`, `${JSON.stringify(sourcesIndex(meta, modules))}\n`);
  return meta;
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const started = Date.now();
  await buildCli();
  console.log(`build-cli: dist/openfief.mjs in ${Date.now() - started} ms`);
}
