#!/usr/bin/env node
// Compiles the `openfief` command once into dist/openfief.mjs (ESM, split into chunks so what only
// one command needs loads only for it), its dependencies bundled in too: loading hundreds of small
// CommonJS files costs a command more than its work (ADR 0008). Left out: the native SQLite
// binding, the Kubernetes client (loaded only in cluster mode), and the compilers tsx and esbuild. `npm ci` runs it (the `prepare` script); bin/openfief.js uses the
// bundle when it is newer than every source file and falls back to tsx otherwise.
// The plugin sandbox (src/host/sandbox/) runs in processes and threads of its own, started from a
// file: it is emitted beside the bundle (dist/sandbox/), one self-contained file per entry, so the
// bundle never reaches back into the source tree.
import { mkdirSync, rmSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
mkdirSync(`${ROOT}dist`, { recursive: true });
const started = Date.now();
// The sandbox first: a bundle newer than the sources is only used with its sandbox in place.
// Chunk names carry a hash: without the clean, every build would leave the last one's behind.
for (const old of ["sandbox", "chunks"]) rmSync(`${ROOT}dist/${old}`, { recursive: true, force: true });
await build({
  entryPoints: [`${ROOT}src/host/sandbox/sandbox.js`, `${ROOT}src/host/sandbox/instance.js`],
  outdir: `${ROOT}dist/sandbox`,
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  logLevel: "warning",
  legalComments: "none",
});
await build({
  entryPoints: [`${ROOT}src/cli/main.ts`],
  outdir: `${ROOT}dist`,
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
});
console.log(`build-cli: dist/openfief.mjs in ${Date.now() - started} ms`);
