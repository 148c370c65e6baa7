/** Running the `openfief` command as a user would: a child process, its output, its exit code. */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

export const BIN = fileURLToPath(new URL("../../bin/openfief.js", import.meta.url));
export const ROOT = fileURLToPath(new URL("../../", import.meta.url));

export interface Run {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

export function openfief(args: readonly string[], env: Readonly<Record<string, string>> = {}): Promise<Run> {
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
