#!/usr/bin/env node
// The `openfief` command. Runs the bundle `npm ci` compiled (dist/openfief.mjs, see
// scripts/build-cli.mjs) when it is newer than every source file, so a command answers quickly;
// otherwise the TypeScript sources through tsx, so an edited clone never runs stale code.
import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const BUNDLE = join(ROOT, "dist", "openfief.mjs");

function newest(dir, floor) {
  let max = floor;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, entry.name);
    if (entry.isDirectory()) max = newest(p, max);
    else if (entry.name.endsWith(".ts") && !entry.name.endsWith(".test.ts")) max = Math.max(max, statSync(p).mtimeMs);
  }
  return max;
}

function bundleIsFresh() {
  try {
    const built = statSync(BUNDLE).mtimeMs;
    return process.env.OPENFIEF_NO_BUNDLE !== "1" && newest(join(ROOT, "src"), newest(join(ROOT, "migrations"), 0)) <= built;
  } catch {
    return false;
  }
}

if (bundleIsFresh()) {
  await import(pathToFileURL(BUNDLE).href);
} else {
  const { register } = await import("tsx/esm/api");
  register();
  await import("../src/cli/main.ts");
}
