#!/usr/bin/env node
// The `openfief` command. Runs the bundle `npm ci` compiled (dist/openfief.mjs, see
// scripts/build-cli.mjs) when it is newer than every source file the command asked for was built
// from (dist/sources.json lists them), so a command answers quickly; otherwise the TypeScript
// sources through tsx, so an edited clone never runs stale code. OPENFIEF_BUNDLE=required refuses
// that fallback (the end-to-end tests run what users run); OPENFIEF_NO_BUNDLE=1 forces it.
//
// `up` and `egress` run the egress proxy, which needs glibc's heap setting in the environment the
// process starts with (ADR 0098): without it, this process starts the command once more with it
// and only relays signals and the exit status.
// Built-ins by require(): imported as ES modules, node:fs alone loads fs/promises, readline and the
// streams, which a read command never uses (ADR 0200).
import { createRequire } from "node:module";
const require = createRequire(import.meta.url);
const { existsSync, readFileSync, statSync } = require("node:fs");
const { join } = require("node:path");
const { fileURLToPath, pathToFileURL } = require("node:url");
import { BUNDLE, ROOT, SANDBOX, proxyEnvironment } from "./launch.js";

const DIST = join(ROOT, "dist");
const argv = process.argv.slice(2);
const env = proxyEnvironment(argv, process.env);

if (env !== null) {
  // child_process (with net, streams and dgram) loads only here: a read command never spawns.
  const { spawn } = await import("node:child_process");
  relay(spawn(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), ...argv], { stdio: "inherit", env: { ...env, OPENFIEF_LAUNCHER_PID: String(process.pid) } }));
} else {
  watchLauncher();
  await run();
}

/** The sources the bundle holds for this command line, or undefined when there is no bundle to use. */
function sources() {
  if (process.env.OPENFIEF_NO_BUNDLE === "1") return undefined;
  try {
    // Each module's sources are indices into `files`.
    const index = JSON.parse(readFileSync(join(DIST, "sources.json"), "utf8"));
    const paths = (module) => index.sources[module].map((i) => index.files[i]);
    if (Object.hasOwn(index.commands, argv[0] ?? "")) return paths(index.commands[argv[0]]);
    // A line that names no command (--version, the full help, a mistyped name) loads no command
    // module, so only what the entry loads is checked; `help NAME` loads them all.
    const entryOnly = !(argv[0] === "help" && argv.length > 1) && Object.hasOwn(index.sources, "entry");
    return paths(entryOnly ? "entry" : "all");
  } catch {
    return undefined;
  }
}

/** A file's modification time in ms, Infinity when it is gone or cannot be read. */
function mtime(path) {
  try {
    return statSync(path, { throwIfNoEntry: false })?.mtimeMs ?? Infinity;
  } catch {
    return Infinity;
  }
}

/**
 * Whether the bundle (and its sandbox) is newer than every one of these sources (a source gone
 * counts as newer). Synchronous, stopping at the first newer source: a promise and a callback per
 * file cost more CPU than the system calls themselves.
 */
async function fresh(files) {
  if (!existsSync(SANDBOX)) return false;
  const built = mtime(BUNDLE);
  return built !== Infinity && files.every((p) => mtime(ROOT + p) <= built);
}

async function run() {
  const files = sources();
  // The bundle's entry starts loading (its files read on the thread pool) while the sources are
  // checked: loading runs no command (a module only defines things), so a stale bundle is dropped
  // before anything happens.
  const loading = files === undefined ? undefined : import(pathToFileURL(BUNDLE).href).catch(() => undefined);
  const current = files === undefined ? false : await fresh(files);
  const cli = await loading;
  if (current && cli !== undefined) {
    await cli.runAsProcess(argv, cli.main);
  } else if (process.env.OPENFIEF_BUNDLE === "required") {
    process.stderr.write("openfief: dist/openfief.mjs is missing or older than the sources, and OPENFIEF_BUNDLE=required: run npm run build\n");
    process.exitCode = 3;
  } else {
    const { register } = await import("tsx/esm/api");
    register();
    const { main, runAsProcess } = await import("../src/cli/main.ts");
    await runAsProcess(argv, main);
  }
}

/**
 * Passes a stop on to the command, as SIGTERM: an interrupt from a terminal reaches both processes
 * already, and a second SIGINT would cut the command's orderly stop short. Ends as it ended.
 */
function relay(child) {
  const forward = () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
  };
  const signals = ["SIGINT", "SIGTERM", "SIGHUP"];
  for (const s of signals) process.on(s, forward);
  child.on("error", (err) => {
    process.stderr.write(`openfief: cannot start the command: ${err.message}\n`);
    process.exit(1);
  });
  child.on("exit", (code, signal) => {
    for (const s of signals) process.off(s, forward);
    if (signal !== null) process.kill(process.pid, signal);
    else process.exit(code ?? 1);
  });
}

/** A command started by the relay stops when the relay is gone (killed outright), not lingering on. */
function watchLauncher() {
  const launcher = Number(process.env.OPENFIEF_LAUNCHER_PID ?? "");
  if (!Number.isInteger(launcher) || launcher <= 0) return;
  delete process.env.OPENFIEF_LAUNCHER_PID;
  const timer = setInterval(() => {
    if (process.ppid === launcher) return;
    clearInterval(timer);
    process.kill(process.pid, "SIGTERM");
  }, 1000);
  timer.unref();
}
