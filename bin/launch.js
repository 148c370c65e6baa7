// How bin/openfief.js starts the command: which code runs (the bundle when it is fresh).
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

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
    return existsSync(SANDBOX) && newest(join(ROOT, "src"), newest(join(ROOT, "migrations"), 0)) <= built;
  } catch {
    return false;
  }
}
