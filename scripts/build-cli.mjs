#!/usr/bin/env node
// Compiles the `openfief` command once into dist/openfief.mjs (one ESM file; node_modules stay
// imports), so a command starts in a fraction of the time that compiling TypeScript at every
// start takes (ADR 0008). `npm ci` runs it (the `prepare` script); bin/openfief.js uses the
// bundle when it is newer than every source file and falls back to tsx otherwise.
import { mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";
import { build } from "esbuild";

const require = createRequire(import.meta.url);

/** JSON a package ships (ajv's meta-schemas) is bundled: Node 20 imports JSON only with an import attribute. */
const bundleJson = {
  name: "bundle-json",
  setup(b) {
    b.onResolve({ filter: /\.json$/ }, (args) => (args.path.startsWith(".") ? undefined : { path: require.resolve(args.path, { paths: [args.resolveDir] }) }));
  },
};

const ROOT = fileURLToPath(new URL("..", import.meta.url));
mkdirSync(`${ROOT}dist`, { recursive: true });
const started = Date.now();
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
  packages: "external",
  sourcemap: "linked",
  logLevel: "warning",
  legalComments: "none",
  plugins: [bundleJson],
});
console.log(`build-cli: dist/openfief.mjs in ${Date.now() - started} ms`);
