#!/usr/bin/env node
// The `openfief` command. Runs the bundle `npm ci` compiled (dist/openfief.mjs, see
// scripts/build-cli.mjs) when it is newer than every source file, so a command answers quickly;
// otherwise the TypeScript sources through tsx, so an edited clone never runs stale code.
// OPENFIEF_BUNDLE=required refuses that fallback (the end-to-end tests run what users run);
// OPENFIEF_NO_BUNDLE=1 forces it.
import { pathToFileURL } from "node:url";
import { BUNDLE, bundleIsFresh } from "./launch.js";

await run();

async function run() {
  if (process.env.OPENFIEF_NO_BUNDLE !== "1" && bundleIsFresh()) {
    await import(pathToFileURL(BUNDLE).href);
  } else if (process.env.OPENFIEF_BUNDLE === "required") {
    process.stderr.write("openfief: dist/openfief.mjs is missing or older than the sources, and OPENFIEF_BUNDLE=required: run npm run build\n");
    process.exitCode = 3;
  } else {
    const { register } = await import("tsx/esm/api");
    register();
    await import("../src/cli/main.ts");
  }
}
