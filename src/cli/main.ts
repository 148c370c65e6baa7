/**
 * The `openfief` command. Each subcommand lives in `commands/<name>.ts` and exports
 * `register(program)`; this file only wires them and turns thrown `CliError`s into a one-line
 * reason and a non-zero exit.
 */
import { Command, CommanderError } from "commander";
import { CliError } from "./cli-error.js";
import { commands } from "./commands/index.js";

export function buildProgram(): Command {
  const program = new Command("openfief")
    .description("OpenFief plugin control plane: least-privilege plugins, verified images, egress, and a replayable decision log")
    .showHelpAfterError(false)
    .exitOverride();
  for (const register of commands) register(program);
  return program;
}

export async function main(argv: readonly string[]): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync([...argv], { from: "user" });
    return typeof process.exitCode === "number" ? process.exitCode : 0;
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version end with exit code 0; usage errors were already printed by commander.
      return err.exitCode;
    }
    if (err instanceof CliError) {
      process.stderr.write(`openfief: ${err.message}\n`);
      return err.exitCode;
    }
    process.stderr.write(`openfief: ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  }
}

if (process.argv[1] !== undefined && /openfief(\.js)?$|cli[/\\]main\.ts$/.test(process.argv[1])) {
  const code = await main(process.argv.slice(2));
  process.exitCode = code;
}
