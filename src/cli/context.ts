/**
 * What every command that reads or writes the log shares: the data folder (`--data`, else
 * `OPENFIEF_DATA`, else `.openfief` in the current folder), opening its store, and printing (the
 * logger of long-running commands is in logger.ts, so a command that only reads loads no logger).
 * The store is SQLite in WAL mode, so commands work beside a
 * running `openfief up`.
 */
import { realpathSync } from "node:fs";
import { delimiter, isAbsolute, join, relative } from "node:path";
import type { Command } from "commander";
import { checkDataDir, DEFAULT_DATA_DIR, openDataDir, openDataStore, openLogAt, requireLog, storeLocationOf, tightenedText } from "../app/index.js";
import type { EventLog } from "../events/index.js";
import { isValidPluginName } from "../plugins/index.js";
import { CliError } from "./cli-error.js";

export { DEFAULT_DATA_DIR };

export interface DataOptions {
  data?: string;
  /** `--store`: the log, when not the data folder's own file. */
  store?: string;
  json?: boolean;
}

/** Adds `--data DIR` to a command. */
export function withData(cmd: Command): Command {
  return cmd
    .option("--data <dir>", `the data folder (default: $OPENFIEF_DATA or ${DEFAULT_DATA_DIR})`)
    .option("--store <log>", "the event log, when not the data folder's: sqlite:PATH or postgres://USER@HOST:PORT/DATABASE (default: $OPENFIEF_STORE)");
}

/** Adds `--json` to a command. */
export function withJson(cmd: Command): Command {
  return cmd.option("--json", "print JSON");
}

/** The data folder the command works on, refused (exit 2, one line) when no command could use it. */
export function dataDir(o: DataOptions): string {
  const env = process.env["OPENFIEF_DATA"];
  const dir = o.data ?? (env === undefined || env === "" ? DEFAULT_DATA_DIR : env);
  checkDataDir(dir, o.data !== undefined ? "--data" : env !== undefined && env !== "" ? "$OPENFIEF_DATA" : "the data folder");
  return dir;
}

/** Says on stderr what opening a data folder tightened (a folder an older version made 0755). */
function sayTightened(text: string): void {
  process.stderr.write(`openfief: ${text}\n`);
}

/** Creates or opens the data folder, its owner's only, saying what it tightened. */
export function openDataFolder(dir: string): void {
  const t = openDataDir(dir);
  if (t.length > 0) sayTightened(tightenedText(t));
}

/** Opens the store of the data folder; `mustExist` refuses a folder with no log yet. */
export async function openLog(o: DataOptions, mustExist = true): Promise<EventLog> {
  const at = storeLocationOf(o);
  if (at !== null) return openLogAt(at, { mustExist });
  const dir = dataDir(o);
  if (mustExist) requireLog(dir);
  return openDataStore(dir, undefined, sayTightened);
}

/** Runs `fn` with the store open, closing it after. */
export async function withLog<T>(o: DataOptions, fn: (store: EventLog) => Promise<T> | T, mustExist = true): Promise<T> {
  const store = await openLog(o, mustExist);
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

export function pluginArg(name: string): string {
  const shown = name.length > 64 ? `${name.slice(0, 64)}…` : name;
  if (!isValidPluginName(name)) throw new CliError(`invalid plugin name ${JSON.stringify(shown)}: a DNS label that starts with a letter, at most 56 characters`);
  return name;
}

export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

export function print(line = ""): void {
  process.stdout.write(`${line}\n`);
}

/** A warning about what a command did (it succeeded): on standard error, so the output stays what was asked for. */
export function warn(line: string): void {
  process.stderr.write(`warning: ${line}\n`);
}

/**
 * How a person should type this command to run it again: `openfief` when that name on the PATH
 * is this very command (after `npm link`), else the path it was started by (`./bin/openfief.js`
 * in a checkout) — never `npx openfief`, which starts npm first (about two seconds a command).
 */
export function commandName(o: { argv1?: string | undefined; path?: string; cwd?: string } = {}): string {
  const argv1 = "argv1" in o ? o.argv1 : process.argv[1];
  if (argv1 === undefined) return "openfief";
  const real = (p: string): string | null => {
    try {
      return realpathSync(p);
    } catch {
      return null;
    }
  };
  const self = real(argv1);
  for (const dir of (o.path ?? process.env["PATH"] ?? "").split(delimiter)) {
    if (dir !== "" && self !== null && real(join(dir, "openfief")) === self) return "openfief";
  }
  const rel = relative(o.cwd ?? process.cwd(), argv1);
  return rel !== "" && !rel.startsWith("..") && !isAbsolute(rel) ? `./${rel}` : argv1;
}

/** Formats a list of a table's rows with padded columns. */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (r: readonly string[]) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i] ?? 0))).join("  ").trimEnd();
  return [line(header), ...rows.map(line)].join("\n");
}
