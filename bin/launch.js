// How bin/openfief.js starts the command: which code runs (the bundle when it is fresh) and, for
// the commands that run the egress proxy, the environment glibc must find at the process's start.
// Built-ins by require(), as bin/openfief.js takes them (ADR 0200).
import { createRequire } from "node:module";
const require = createRequire(import.meta.url);
const { existsSync, readdirSync, statSync } = require("node:fs");
const { join } = require("node:path");
const { fileURLToPath } = require("node:url");

export const ROOT = fileURLToPath(new URL("..", import.meta.url));
export const BUNDLE = join(ROOT, "dist", "openfief.mjs");
/** The plugin sandbox the build emits beside the bundle: a bundle without it is not usable. */
export const SANDBOX = join(ROOT, "dist", "sandbox", "sandbox.js");

function newest(dir, floor) {
  let max = floor;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, entry.name);
    if (entry.isDirectory()) max = newest(p, max);
    else if (/\.(ts|js)$/.test(entry.name) && !entry.name.endsWith(".test.ts")) max = Math.max(max, statSync(p).mtimeMs);
  }
  return max;
}

/** Whether dist/ holds a bundle (and its sandbox) newer than every source file. */
export function bundleIsFresh() {
  try {
    const built = statSync(BUNDLE).mtimeMs;
    return existsSync(SANDBOX) && existsSync(join(ROOT, "dist", "sources.json")) && newest(join(ROOT, "src"), newest(join(ROOT, "migrations"), 0)) <= built;
  } catch {
    return false;
  }
}

/**
 * The cluster's heap setting for the egress proxy (ADR 0034): glibc keeps up to 256 MiB of freed
 * heap instead of returning it to the kernel after every collection, which otherwise halves a
 * tunnel's throughput. glibc reads it once, when the process starts.
 */
export const TRIM_TUNABLE = "glibc.malloc.trim_threshold=268435456";

/** The commands whose process runs the egress proxy. */
const PROXY_COMMANDS = new Set(["up", "egress"]);

/**
 * The environment to start the command again with so that its proxy has the cluster's heap
 * setting, or null when this process already has it (or one of the user's own), when the command
 * runs no proxy, or off glibc's Linux. The user's other tunables are kept.
 */
export function proxyEnvironment(args, env, platform = process.platform) {
  if (platform !== "linux") return null;
  const command = args.find((a) => !a.startsWith("-"));
  if (command === undefined || !PROXY_COMMANDS.has(command)) return null;
  const tunables = env.GLIBC_TUNABLES ?? "";
  if (/(^|:)glibc\.malloc\.trim_threshold=/.test(tunables)) return null;
  // First: glibc cuts the string it has parsed in place, so /proc/PID/environ shows only the first.
  return { ...env, GLIBC_TUNABLES: tunables === "" ? TRIM_TUNABLE : `${TRIM_TUNABLE}:${tunables}` };
}
