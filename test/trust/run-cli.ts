/**
 * Runs `openfief` in-process with the given command modules registered, the way src/cli/main.ts
 * does (same exit-code rules), and captures what it printed. Used while a command is not yet
 * listed in commands/index.ts; once it is, `main(argv)` gives the same answers.
 */
import { Command, CommanderError } from "commander";
import { CliError } from "../../src/cli/cli-error.js";
import { buildProgram } from "../../src/cli/main.js";

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

export async function runCli(argv: readonly string[], registers: ReadonlyArray<(program: Command) => void>): Promise<CliRun> {
  const program = await buildProgram();
  for (const register of registers) {
    const probe = new Command();
    register(probe);
    const name = probe.commands[0]?.name();
    if (name !== undefined && !program.commands.some((c) => c.name() === name)) register(program);
  }
  let stdout = "";
  let stderr = "";
  const out = process.stdout.write.bind(process.stdout);
  const err = process.stderr.write.bind(process.stderr);
  process.stdout.write = ((chunk: string | Uint8Array) => {
    stdout += typeof chunk === "string" ? chunk : Buffer.from(chunk).toString();
    return true;
  }) as typeof process.stdout.write;
  process.stderr.write = ((chunk: string | Uint8Array) => {
    stderr += typeof chunk === "string" ? chunk : Buffer.from(chunk).toString();
    return true;
  }) as typeof process.stderr.write;
  process.exitCode = 0;
  let code: number;
  try {
    program.configureOutput({ writeOut: (s) => (stdout += s), writeErr: (s) => (stderr += s) });
    await program.parseAsync([...argv], { from: "user" });
    code = typeof process.exitCode === "number" ? process.exitCode : 0;
  } catch (e) {
    if (e instanceof CommanderError) code = e.exitCode;
    else if (e instanceof CliError) {
      stderr += `openfief: ${e.message}\n`;
      code = e.exitCode;
    } else {
      stderr += `openfief: ${e instanceof Error ? e.message : String(e)}\n`;
      code = 1;
    }
  } finally {
    process.stdout.write = out;
    process.stderr.write = err;
    process.exitCode = 0;
  }
  return { code, stdout, stderr };
}
