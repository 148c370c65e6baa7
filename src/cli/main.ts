/**
 * The `openfief` command. Each subcommand lives in `commands/<name>.ts` and exports
 * `register(program)`; this file only wires them and turns every refusal into a one-line reason
 * and an exit code by one rule: 2 when the command was used wrongly (a bad flag, argument or input
 * file), 1 when it ran and the answer is a refusal or a failed check.
 */
import { Command, CommanderError } from "commander";
import { toAppError } from "../app/index.js";
import { CliError } from "./cli-error.js";
import { commands } from "./commands/index.js";
import { VERSION } from "./version.js";

export function buildProgram(): Command {
  const program = new Command("openfief")
    .description("OpenFief plugin control plane: least-privilege plugins, verified images, egress, and a replayable decision log")
    .version(`openfief ${VERSION} (Node.js ${process.versions.node})`, "-V, --version", "print the version and exit")
    .showHelpAfterError(false)
    .exitOverride();
  for (const register of commands) register(program);
  return program;
}

/** Commander's own refusals that end with 0 (help, version). */
const SUCCESS_CODES = new Set(["commander.helpDisplayed", "commander.help", "commander.version", "commander.executeSubCommandAsync"]);

export async function main(argv: readonly string[]): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync([...argv], { from: "user" });
    return typeof process.exitCode === "number" ? process.exitCode : 0;
  } catch (err) {
    if (err instanceof CommanderError) {
      // Commander already printed the reason; a usage error is 2 like every other.
      return SUCCESS_CODES.has(err.code) || err.exitCode === 0 ? 0 : 2;
    }
    if (err instanceof CliError) {
      process.stderr.write(`openfief: ${err.message}\n`);
      return err.exitCode;
    }
    const e = toAppError(err);
    process.stderr.write(`openfief: ${e.message}\n`);
    return e.exitCode;
  }
}

/** A reader that went away (`openfief log | head -1`) ends the command quietly, not with a stack trace. */
function quietOnClosedPipe(stream: NodeJS.WriteStream): void {
  stream.on("error", (err: NodeJS.ErrnoException) => {
    if (err.code === "EPIPE") process.exit(process.exitCode ?? 0);
    throw err;
  });
}

if (process.argv[1] !== undefined && /openfief(\.js|\.mjs)?$|cli[/\\]main\.(ts|js)$/.test(process.argv[1])) {
  quietOnClosedPipe(process.stdout);
  quietOnClosedPipe(process.stderr);
  const code = await main(process.argv.slice(2));
  process.exitCode = code;
}
