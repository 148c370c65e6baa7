/**
 * Running the `openfief` command as a user would. `openfief()` runs it in this process through
 * `main(argv)` with standard output and error captured (fast: no process start per command);
 * `spawnOpenfief()` and `startOpenfief()` start a real process from the compiled bundle — what
 * `npm start` and `npx openfief` run — built first when the sources are newer, and refusing
 * (OPENFIEF_BUNDLE=required) to fall back to the TypeScript sources.
 */
import { spawn } from "node:child_process";
import type { ChildProcessWithoutNullStreams } from "node:child_process";
import { mkdirSync, rmdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { main } from "../../src/cli/main.js";
import { bundleIsFresh } from "../../bin/launch.js";

export const BIN = fileURLToPath(new URL("../../bin/openfief.js", import.meta.url));
export const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** What a process started from the bundle gets: the bundle or nothing, and quiet logs. */
export const BUNDLE_ENV: Readonly<Record<string, string>> = { OPENFIEF_BUNDLE: "required", OPENFIEF_LOG_LEVEL: "warn" };

let building: Promise<void> | null = null;

/**
 * Builds dist/ when the sources are newer (as `npm ci` does), once per test process; parallel
 * test files take turns through a lock folder, and a file that waited finds the bundle fresh.
 */
export function freshBundle(): Promise<void> {
  building ??= (async () => {
    mkdirSync(`${ROOT}dist`, { recursive: true });
    const lock = `${ROOT}dist/.build-lock`;
    for (let waited = 0; ; waited += 200) {
      if (bundleIsFresh()) return;
      try {
        mkdirSync(lock);
        break;
      } catch {
        if (waited > 120_000) throw new Error(`${lock} is held for over two minutes: remove it if no build runs`);
        await new Promise((r) => setTimeout(r, 200));
      }
    }
    try {
      if (bundleIsFresh()) return;
      const built = await run(process.execPath, [`${ROOT}scripts/build-cli.mjs`], {});
      if (built.code !== 0 || !bundleIsFresh()) throw new Error(`npm run build failed: ${built.stderr}${built.stdout}`);
    } finally {
      rmdirSync(lock);
    }
  })();
  return building;
}

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

/** Runs the command as a child process (`node bin/openfief.js …`) from the fresh bundle. */
export async function spawnOpenfief(args: readonly string[], env: Readonly<Record<string, string>> = {}): Promise<Run> {
  await freshBundle();
  return run(process.execPath, [BIN, ...args], { ...BUNDLE_ENV, ...env });
}

function run(command: string, args: readonly string[], env: Readonly<Record<string, string>>): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
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

/** A long-running command (`up`, `egress`) started from the bundle. */
export interface Started {
  readonly child: ChildProcessWithoutNullStreams;
  /** Everything it printed so far. */
  readonly output: () => { readonly stdout: string; readonly stderr: string };
  /** Resolves with its output once standard output matches, or rejects if it ends first or `ms` pass. */
  waitFor(pattern: RegExp, ms?: number): Promise<string>;
  /** Resolves when it has ended. */
  readonly exited: Promise<Run>;
  /** Sends SIGTERM (once) and waits for the end. */
  stop(): Promise<Run>;
}

/** Starts `node bin/openfief.js ARGS` from the fresh bundle, without waiting for it to end. */
export async function startOpenfief(args: readonly string[], env: Readonly<Record<string, string>> = {}): Promise<Started> {
  await freshBundle();
  const child = spawn(process.execPath, [BIN, ...args], { cwd: ROOT, env: { ...process.env, ...BUNDLE_ENV, ...env } });
  child.stdin.end();
  let stdout = "";
  let stderr = "";
  const changed = new Set<() => void>();
  child.stdout.on("data", (d: Buffer) => {
    stdout += d.toString();
    for (const f of changed) f();
  });
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<Run>((resolve) => child.on("close", (code, signal) => resolve({ code, signal, stdout, stderr })));
  let ended = false;
  void exited.then(() => {
    ended = true;
    for (const f of changed) f();
  });
  return {
    child,
    output: () => ({ stdout, stderr }),
    exited,
    waitFor: (pattern, ms = 60_000) =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(() => done(new Error(`no ${String(pattern)} in ${ms} ms; stdout: ${stdout}; stderr: ${stderr}`)), ms);
        const check = (): void => {
          if (pattern.test(stdout)) done(null);
          else if (ended) done(new Error(`ended (${String(child.exitCode ?? child.signalCode)}) before ${String(pattern)}; stdout: ${stdout}; stderr: ${stderr}`));
        };
        const done = (err: Error | null): void => {
          clearTimeout(timer);
          changed.delete(check);
          if (err === null) resolve(stdout);
          else reject(err);
        };
        changed.add(check);
        check();
      }),
    stop: () => {
      if (!ended && child.signalCode === null && child.exitCode === null) child.kill("SIGTERM");
      return exited;
    },
  };
}
