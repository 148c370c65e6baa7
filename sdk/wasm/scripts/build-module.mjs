#!/usr/bin/env node
// Builds an OpenFief WebAssembly plugin with AssemblyScript, reproducibly, and checks the module
// speaks ABI version 1 (docs/abi.md) before writing it.
//
//   openfief-wasm-build --config asconfig.json --out build/name.wasm [--manifest manifest.json --manifest-module assembly/manifest.ts] [--verify]
//
// --manifest writes manifest.json, compacted, into an AssemblyScript module as MANIFEST_JSON, so
// the module answers `manifest` with exactly the signed label's JSON. Without --verify it writes
// the module and `<out>.sha256` (sha256sum's format). With --verify it builds in memory and fails
// unless the module, its .sha256 and the manifest module are byte for byte what is committed.
// AssemblyScript is resolved from the package being built (its own devDependency).
import { createHash } from "node:crypto";
import { existsSync, readFileSync, writeFileSync, mkdirSync } from "node:fs";
import { createRequire } from "node:module";
import { basename, dirname, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

const ALLOWED_IMPORT_MODULES = new Set(["wasi_snapshot_preview1"]);
const ALLOWED_IMPORTS = new Set(["openfief.host_call"]);
const REQUIRED_EXPORTS = ["memory", "openfief_abi_version", "openfief_alloc", "openfief_call"];

function arg(name) {
  const i = process.argv.indexOf(name);
  if (i < 0) return undefined;
  const v = process.argv[i + 1];
  if (v === undefined || v.startsWith("--")) throw new Error(`${name} needs a value`);
  return v;
}

const config = arg("--config") ?? "asconfig.json";
const out = arg("--out");
const manifest = arg("--manifest");
const manifestModule = arg("--manifest-module");
const verify = process.argv.includes("--verify");
if (out === undefined) throw new Error("--out is required");
if ((manifest === undefined) !== (manifestModule === undefined)) throw new Error("--manifest and --manifest-module go together");

const problems = [];

if (manifest !== undefined) {
  const compact = JSON.stringify(JSON.parse(readFileSync(manifest, "utf8")));
  const text = `// Generated from ${basename(manifest)} by openfief-wasm-build; edit ${basename(manifest)}, not this file.\n` +
    `/** The plugin's manifest, exactly the JSON of its signed label. */\nexport const MANIFEST_JSON: string = ${JSON.stringify(compact)};\n`;
  if (verify) {
    if (!existsSync(manifestModule) || readFileSync(manifestModule, "utf8") !== text) problems.push(`${manifestModule} is not generated from ${manifest}`);
  } else {
    writeFileSync(manifestModule, text);
  }
}

const require = createRequire(join(process.cwd(), "package.json"));
const { default: asc } = await import(pathToFileURL(require.resolve("assemblyscript/dist/asc.js")).href);
let wasm;
const stderr = [];
const result = await asc.main(["--config", config, "--outFile", out], {
  stdout: { write: (s) => process.stdout.write(s) },
  stderr: { write: (s) => void stderr.push(String(s)) },
  writeFile: (name, contents) => {
    if (resolve(name) === resolve(out) || name.endsWith(".wasm")) wasm = Buffer.from(contents);
  },
});
if (result.error !== null || wasm === undefined) {
  process.stderr.write(stderr.join(""));
  throw new Error(`asc failed: ${result.error?.message ?? "no module written"}`);
}

const module = new WebAssembly.Module(wasm);
const imports = WebAssembly.Module.imports(module);
for (const i of imports) {
  const name = `${i.module}.${i.name}`;
  if (i.kind !== "function" || !(ALLOWED_IMPORT_MODULES.has(i.module) || ALLOWED_IMPORTS.has(name))) problems.push(`the module imports ${i.kind} ${name}, which the host refuses`);
}
const exports = new Set(WebAssembly.Module.exports(module).map((e) => e.name));
for (const e of REQUIRED_EXPORTS) if (!exports.has(e)) problems.push(`the module does not export ${e}`);

const hex = createHash("sha256").update(wasm).digest("hex");
const sumLine = `${hex}  ${basename(out)}\n`;
if (verify) {
  if (!existsSync(out)) problems.push(`${out} is missing`);
  else if (!wasm.equals(readFileSync(out))) problems.push(`${out} differs from a fresh build (sha256 ${hex})`);
  if (!existsSync(`${out}.sha256`) || readFileSync(`${out}.sha256`, "utf8") !== sumLine) problems.push(`${out}.sha256 does not record the fresh build's sha256 ${hex}`);
}
if (problems.length > 0) {
  for (const p of problems) console.error(`openfief-wasm-build: ${p}`);
  process.exit(1);
}
if (!verify) {
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, wasm);
  writeFileSync(`${out}.sha256`, sumLine);
}
console.log(`${verify ? "verified" : "built"} ${out}: ${wasm.length} bytes, sha256 ${hex}`);
console.log(`imports: ${imports.map((i) => `${i.module}.${i.name}`).join(", ")}`);
