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
 * bin/openfief.js checks before it trusts the bundle.
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
  return {
    commands: Object.fromEntries(modules.flatMap((m) => m.names.map((n) => [n, m.module]))),
    // `entry`: what the entry loads without any command module (`--version`).
    sources: { ...Object.fromEntries(modules.map((m) => [m.module, reach(m.module)])), all: reach("all"), entry: reach(null) },
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

/** Rewrites the static imports of built-ins in the bundle's files outside import cycles; returns how many. */
function requireBuiltins(metafile) {
  const outputs = metafile.outputs;
  const files = Object.keys(outputs).filter((o) => o.endsWith(".mjs"));
  // Files on a cycle of static imports (each reaches itself).
  const reaches = (from, to) => {
    const seen = new Set();
    const todo = [from];
    while (todo.length > 0) {
      const o = todo.pop();
      for (const i of outputs[o]?.imports ?? []) {
        if (i.kind !== "import-statement" || i.external || seen.has(i.path)) continue;
        if (i.path === to) return true;
        seen.add(i.path);
        todo.push(i.path);
      }
    }
    return false;
  };
  let count = 0;
  for (const file of files) {
    if (reaches(file, file)) continue;
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
  const result = await build({
    entryPoints: [`${ROOT}src/cli/main.ts`],
    outdir,
    // Paths in the metafile, and so in sources.json, relative to the repository.
    absWorkingDir: ROOT,
    entryNames: "openfief",
    chunkNames: "chunks/[name]-[hash]",
    outExtension: { ".js": ".mjs" },
    splitting: true,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    external: ["bindings", "@kubernetes/client-node", "esbuild", "tsx", "tsx/*"],
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
  writeFileSync(`${outdir}/sources.json`, `${JSON.stringify(sourcesIndex(result.metafile, modules))}\n`);
  return result.metafile;
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const started = Date.now();
  await buildCli();
  console.log(`build-cli: dist/openfief.mjs in ${Date.now() - started} ms`);
}
