// For the CLI's bundle (build-cli.mjs): commander requires node:child_process when it loads, only
// to spawn executable subcommands, which openfief has none of. Loading child_process (and net,
// dgram and streams with it) cost every command start-up time; this stand-in loads it only if a
// property of it is ever used.
"use strict";
let loaded;
// eslint-disable-next-line @typescript-eslint/no-require-imports -- CommonJS by design: loaded lazily, by require
const load = () => (loaded ??= require("node:child_process"));
module.exports = new Proxy({}, { get: (_target, key) => load()[key] });
