/**
 * The `openfief` command. Each subcommand lives in `commands/<name>.ts` and exports
 * `register(program)`; this file loads the module of the subcommand asked for, or every module
 * for the full help (ADR 0113), and program.ts runs it. bin/openfief.js runs it, from the bundle
 * of that one command when the bundle is current.
 */
import type { Command } from "commander";
import { COMMANDS, modulesFor } from "./commands/index.js";
import { programWith, runProgram } from "./program.js";
import type { Register } from "./program.js";

export { runAsProcess } from "./program.js";

async function load(modules: readonly { load: () => Promise<Register> }[]): Promise<Register[]> {
  return Promise.all(modules.map((m) => m.load()));
}

/** The program with the subcommands `argv` needs (every one when `argv` is left out). */
export async function buildProgram(argv?: readonly string[]): Promise<Command> {
  return programWith(await load(argv === undefined ? COMMANDS : modulesFor(argv)));
}

/** Runs a command line; the exit code. */
export async function main(argv: readonly string[]): Promise<number> {
  return runProgram(argv, () => load(modulesFor(argv)));
}
