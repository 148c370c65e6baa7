#!/usr/bin/env node
// Compiles the `openfief` command once into dist/openfief.mjs (ESM, split into chunks so what only
// one command needs loads only for it), its dependencies bundled in too: loading hundreds of small
// CommonJS files costs a command more than its work (ADR 0008). Left out: the native SQLite
// binding, the Kubernetes client (loaded only in cluster mode), and the compilers tsx and esbuild. `npm ci` runs it (the `prepare` script); bin/openfief.js uses the
// bundle when it is newer than every source file and falls back to tsx otherwise.
//
// Each command module is loaded by its own import() (src/cli/commands/index.ts), and the bundle
// looks through the rooms' doors (look-through-doors.mjs), so a command's chunks hold the modules
// it uses rather than every module its rooms' doors re-export (ADR 0113). Any warning fails the build.
// The plugin sandbox (src/host/sandbox/) runs in processes and threads of its own, started from a
// file: it is emitted beside the bundle (dist/sandbox/), one self-contained file per entry, so the
// bundle never reaches back into the source tree.
import { mkdirSync, rmSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { lookThroughDoors } from "./look-through-doors.mjs";

const ROOT = fileURLToPath(new URL("..", import.meta.url));

/**
 * Builds the bundle into `outdir` (dist/ unless told) and returns esbuild's metafile: which chunks
 * each entry loads and what they hold (test/cli/start-up.test.ts reads it).
 */
export async function buildCli(outdir = `${ROOT}dist`) {
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
    entryNames: "openfief",
    chunkNames: "chunks/[name]-[hash]",
    outExtension: { ".js": ".mjs" },
    splitting: true,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    external: ["better-sqlite3", "@kubernetes/client-node", "esbuild", "tsx", "tsx/*"],
    // Bundled CommonJS code calls require(): give the ESM bundle one.
    banner: { js: "import { createRequire as __openfiefRequire } from 'node:module'; const require = __openfiefRequire(import.meta.url);" },
    sourcemap: "linked",
    logLevel: "warning",
    legalComments: "none",
    metafile: true,
    plugins: [lookThroughDoors(`${ROOT}src`)],
  });
  if (result.warnings.length > 0) throw new Error(`build-cli: ${result.warnings.length} warning(s); fix them, the bundle is refused`);
  return result.metafile;
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const started = Date.now();
  await buildCli();
  console.log(`build-cli: dist/openfief.mjs in ${Date.now() - started} ms`);
}
