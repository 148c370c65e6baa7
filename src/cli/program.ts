/**
 * Running the `openfief` program with a given set of command modules: parse, run, and turn every
 * refusal into a one-line reason and an exit code by one rule: 2 when the command was used wrongly
 * (a bad flag, argument or input file), 1 when it ran and the answer is a refusal or a failed
 * check. It imports no command module itself, so the bundle of one command holds that command
 * alone (ADR 0113).
 */
import { Command, CommanderError } from "commander";
import { toAppError } from "../app/index.js";
import { CliError } from "./cli-error.js";
import { VERSION } from "./version.js";

/** Adds a module's subcommands to the program. */
export type Register = (program: Command) => void;

/** The program, with these modules' subcommands in this order. */
export function programWith(registers: readonly Register[]): Command {
  const program = new Command("openfief")
    .description("OpenFief plugin control plane: least-privilege plugins, verified images, egress, and a replayable decision log")
    .version(`openfief ${VERSION} (Node.js ${process.versions.node})`, "-V, --version", "print the version and exit")
    .showHelpAfterError(false)
    .configureOutput({ outputError: (text, write) => write(oneLineError(text)) })
    .exitOverride();
  for (const register of registers) register(program);
  return program;
}

/**
 * Commander's refusal as every other refusal reads: one line, `openfief: ` first. Commander writes
 * `error: unknown option '--dta'` and its suggestion on a line of its own.
 */
export function oneLineError(text: string): string {
  const lines = text.replace(/^error: /, "").split("\n").map((l) => l.trim()).filter((l) => l !== "");
  return `openfief: ${lines.join(" ")}\n`;
}

/** Commander's own refusals that end with 0 (help, version). */
const SUCCESS_CODES = new Set(["commander.helpDisplayed", "commander.help", "commander.version", "commander.executeSubCommandAsync"]);

/** Runs `argv` against the program the modules `registers` (loaded by `load`) make; the exit code. */
export async function runProgram(argv: readonly string[], load: () => Promise<readonly Register[]> | readonly Register[]): Promise<number> {
  try {
    const program = programWith(await load());
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

/** Runs a command line as the process's own: its output pipes closed quietly, its exit code the process's. */
export async function runAsProcess(argv: readonly string[], run: (argv: readonly string[]) => Promise<number>): Promise<void> {
  quietOnClosedPipe(process.stdout);
  quietOnClosedPipe(process.stderr);
  process.exitCode = await run(argv);
}
