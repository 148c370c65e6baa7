/**
 * The `openfief` command. Each subcommand lives in `commands/<name>.ts` and exports
 * `register(program)`; this file loads the module of the subcommand asked for (ADR 0113), and
 * program.ts runs it. The full help prints from the commands' summaries, loading no module (ADR 0188). bin/openfief.js runs it, from the bundle
 * of that one command when the bundle is current.
 */
import { createRequire } from "node:module";
import type { Command } from "commander";
import type * as Re2Module from "re2js";
import { loadEventValidation } from "../events/index.js";
import { loadSchemaChecks, providePatternEngineLoader } from "../plugins/index.js";
import { COMMANDS, modulesFor } from "./commands/index.js";
import { programWith, runProgram } from "./program.js";
import type { Register } from "./program.js";

export { runAsProcess } from "./program.js";

// A command that meets a pattern the schema checks did not bring (a trusted signer named by a
// subject pattern) loads RE2 there and then, from node_modules; most commands never do (ADR 0188).
providePatternEngineLoader(() => (createRequire(import.meta.url)("re2js") as typeof Re2Module).RE2JS);

async function load(modules: readonly { load: () => Promise<Register> }[]): Promise<Register[]> {
  return Promise.all(modules.map((m) => m.load()));
}

/**
 * The commands that load the config-schema checks only when the log does not already say what
 * they would answer (ADR 0186; the log's commands too, ADR 0189); every other command that runs
 * loads them as it starts, as it did when the parsers imported them, so no path that parses a
 * plugin finds them missing. Help and a mistyped name run no command and load nothing.
 */
const SCHEMA_CHECKS_ON_DEMAND: ReadonlySet<string> = new Set(["get", "why", "log", "replay", "verify-log", "check-decisions"]);

/** The subcommand this line runs; undefined for help, no arguments or a mistyped name. */
function commandRun(argv: readonly string[]): string | undefined {
  const name = argv[0];
  const runs = name !== undefined && COMMANDS.some((m) => m.names.includes(name)) && !argv.includes("--help") && !argv.includes("-h");
  return runs ? name : undefined;
}

function schemaChecksFor(argv: readonly string[]): Promise<unknown> {
  const name = commandRun(argv);
  return name !== undefined && !SCHEMA_CHECKS_ON_DEMAND.has(name) ? loadSchemaChecks() : Promise.resolve();
}

/**
 * The commands that only read the log, and so never validate an event (ADR 0187); every other
 * command that runs loads event validation as it starts. Help and a mistyped name load nothing.
 */
const READ_ONLY: ReadonlySet<string> = new Set(["get", "why", "log", "replay", "verify-log", "check-decisions"]);

function eventValidationFor(argv: readonly string[]): Promise<unknown> {
  const name = commandRun(argv);
  return name !== undefined && !READ_ONLY.has(name) ? loadEventValidation() : Promise.resolve();
}

/** The program with the subcommands `argv` needs (every one when `argv` is left out). */
export async function buildProgram(argv?: readonly string[]): Promise<Command> {
  return programWith(await load(argv === undefined ? COMMANDS : modulesFor(argv)));
}

/**
 * Whether the line only prints the full help or refuses a mistyped name (no arguments, `--help`,
 * `help` alone, a name no module registers): the summaries answer it as the modules would, and no
 * module loads. `help NAME` prints NAME's own help, from its module.
 */
function helpOnly(argv: readonly string[]): boolean {
  return modulesFor(argv) === COMMANDS && !(argv[0] === "help" && argv.length > 1);
}

/** Runs a command line; the exit code. */
export async function main(argv: readonly string[]): Promise<number> {
  if (helpOnly(argv)) {
    const { registerSummaries } = await import("./commands/summaries.js");
    return runProgram(argv, () => [registerSummaries]);
  }
  return runProgram(argv, async () => (await Promise.all([load(modulesFor(argv)), schemaChecksFor(argv), eventValidationFor(argv)]))[0]);
}
