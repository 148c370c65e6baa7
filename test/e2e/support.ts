/**
 * Running the `openfief` command as a user would. `openfief()` runs it in this process through
 * `main(argv)` with standard output and error captured (fast: no process start per command);
 * `spawnOpenfief()` starts a real process, for what only a process can show (being killed).
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { main } from "../../src/cli/main.js";

export const BIN = fileURLToPath(new URL("../../bin/openfief.js", import.meta.url));
export const ROOT = fileURLToPath(new URL("../../", import.meta.url));

export interface Run {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs one command in this process; output is captured, not printed. Commands run one at a time. */
export async function openfief(args: readonly string[]): Promise<Run> {
  const out = process.stdout.write.bind(process.stdout);
  const err = process.stderr.write.bind(process.stderr);
  let stdout = "";
  let stderr = "";
  const savedExit = process.exitCode;
  process.exitCode = undefined;
  process.stdout.write = ((chunk: string | Uint8Array) => ((stdout += chunk.toString()), true)) as typeof process.stdout.write;
  process.stderr.write = ((chunk: string | Uint8Array) => ((stderr += chunk.toString()), true)) as typeof process.stderr.write;
  try {
    const code = await main(args);
    return { code, signal: null, stdout, stderr };
  } finally {
    process.stdout.write = out;
    process.stderr.write = err;
    process.exitCode = savedExit;
  }
}

/** Runs the command as a child process (`node bin/openfief.js …`). */
export function spawnOpenfief(args: readonly string[], env: Readonly<Record<string, string>> = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd: ROOT, env: { ...process.env, OPENFIEF_LOG_LEVEL: "warn", ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", reject);
    child.on("close", (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

/** Runs a command that must succeed, and returns its standard output. */
export async function ok(args: readonly string[]): Promise<string> {
  const r = await openfief(args);
  if (r.code !== 0) throw new Error(`openfief ${args.join(" ")} exited ${String(r.code)}: ${r.stderr}${r.stdout}`);
  return r.stdout;
}

/** Runs a command with --json and parses its output. */
export async function json<T>(args: readonly string[]): Promise<T> {
  return JSON.parse(await ok([...args, "--json"])) as T;
}
