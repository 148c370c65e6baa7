#!/usr/bin/env node
// The `openfief` command. Runs the bundle `npm ci` compiled (dist/openfief.mjs, see
// scripts/build-cli.mjs) when it is newer than every source file the command asked for was built
// from (dist/sources.json lists them), so a command answers quickly; otherwise the TypeScript
// sources through tsx, so an edited clone never runs stale code.
import { readFileSync, stat } from "node:fs";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const DIST = join(ROOT, "dist");
const argv = process.argv.slice(2);

/** The sources the bundle holds for this command line, or undefined when there is no bundle to use. */
function sources() {
  if (process.env.OPENFIEF_NO_BUNDLE === "1") return undefined;
  try {
    const index = JSON.parse(readFileSync(join(DIST, "sources.json"), "utf8"));
    const module = Object.hasOwn(index.commands, argv[0] ?? "") ? index.commands[argv[0]] : "all";
    return index.sources[module];
  } catch {
    return undefined;
  }
}

const mtime = (path) => new Promise((resolve) => stat(path, (err, s) => resolve(err === null ? s.mtimeMs : Infinity)));

/** Whether the bundle is newer than every one of these sources (a source gone counts as newer). */
async function fresh(files) {
  const [built, ...times] = await Promise.all([mtime(join(DIST, "openfief.mjs")), ...files.map((p) => mtime(join(ROOT, p)))]);
  return built !== Infinity && times.every((t) => t <= built);
}

const files = sources();
// The sources are checked on the thread pool while the bundle's entry loads: loading runs no
// command (a module only defines things), so a stale bundle is dropped before anything happens.
const [current, cli] = await Promise.all([
  files === undefined ? false : fresh(files),
  files === undefined ? undefined : import(pathToFileURL(join(DIST, "openfief.mjs")).href).catch(() => undefined),
]);
if (current && cli !== undefined) {
  await cli.runAsProcess(argv, cli.main);
} else {
  const { register } = await import("tsx/esm/api");
  register();
  const { main, runAsProcess } = await import("../src/cli/main.ts");
  await runAsProcess(argv, main);
}
