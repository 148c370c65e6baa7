// For the CLI's bundle (build-cli.mjs): better-sqlite3's JavaScript is bundled, and its native
// binding is loaded from the installed package's build/Release by path. Left to itself,
// better-sqlite3 finds the binding through `bindings`, which walks a stack trace to the package's
// folder and stats a dozen candidate paths; and required from node_modules, its nine CommonJS
// files are each resolved, read and compiled apart. Every command that opens the log paid both
// (ADR 0200). Where build/Release holds no binding, `bindings` searches the package as before.
"use strict";
/* eslint-disable @typescript-eslint/no-require-imports -- CommonJS by design: the native binding is required by path */
const { dirname, join } = require("node:path");
const Database = require("better-sqlite3/lib/index.js");

let addon;
function binding() {
  if (addon !== undefined) return addon;
  const root = dirname(require.resolve("better-sqlite3/package.json"));
  try {
    addon = require(join(root, "build", "Release", "better_sqlite3.node"));
  } catch {
    addon = require("bindings")({ bindings: "better_sqlite3.node", module_root: root });
  }
  return addon;
}

/** better-sqlite3's Database, given the binding unless the caller names one. */
class BundledDatabase extends Database {
  constructor(filename, options) {
    super(filename, options != null && options.nativeBinding != null ? options : { ...options, nativeBinding: binding() });
  }
}

module.exports = BundledDatabase;
