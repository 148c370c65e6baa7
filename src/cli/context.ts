/**
 * What every command that reads or writes the log shares: the data folder (`--data`, else
 * `OPENFIEF_DATA`, else `.openfief` in the current folder), opening its store, printing, and the
 * logger of long-running commands. The store is SQLite in WAL mode, so commands work beside a
 * running `openfief up`.
 */
import { realpathSync } from "node:fs";
import { delimiter, isAbsolute, join, relative } from "node:path";
import { Writable } from "node:stream";
import type { Command } from "commander";
import { pino } from "pino";
import type { Logger } from "pino";
import { checkDataDir, DEFAULT_DATA_DIR, openDataStore, requireLog } from "../app/index.js";
import type { EventStore } from "../events/index.js";
import { isValidPluginName } from "../plugins/index.js";
import { CliError } from "./cli-error.js";

export { DEFAULT_DATA_DIR };

export interface DataOptions {
  data?: string;
  json?: boolean;
}

/** Adds `--data DIR` to a command. */
export function withData(cmd: Command): Command {
  return cmd.option("--data <dir>", `the data folder (default: $OPENFIEF_DATA or ${DEFAULT_DATA_DIR})`);
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

/** Opens the store of the data folder; `mustExist` refuses a folder with no log yet. */
export async function openLog(o: DataOptions, mustExist = true): Promise<EventStore> {
  const dir = dataDir(o);
  if (mustExist) requireLog(dir);
  return openDataStore(dir);
}

/** Runs `fn` with the store open, closing it after. */
export async function withLog<T>(o: DataOptions, fn: (store: EventStore) => Promise<T> | T, mustExist = true): Promise<T> {
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

/** Every field that could hold a token, redacted wherever it appears in a log line. */
export const REDACT = ["token", "*.token", "authorization", "*.authorization", "headers.authorization", "headers[\"proxy-authorization\"]", "req.headers.authorization", "req.headers[\"proxy-authorization\"]", "cookie", "*.cookie"];

const LEVELS: Record<number, string> = { 10: "trace", 20: "debug", 30: "info", 40: "warn", 50: "error", 60: "fatal" };

/** JSON log lines as one readable line each (`12:00:01 warn message key=value`), for a terminal. */
export function readableLines(out: NodeJS.WritableStream, minLevel = 40): Writable {
  return new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const text of chunk.toString("utf8").split("\n")) {
        if (text === "") continue;
        try {
          const { level, time, msg, pid: _pid, hostname: _h, ...rest } = JSON.parse(text) as Record<string, unknown>;
          if (typeof level !== "number" || level < minLevel) continue;
          const at = typeof time === "number" ? new Date(time).toISOString().slice(11, 19) : "";
          const fields = Object.entries(rest).map(([k, v]) => `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`).join(" ");
          out.write(`${at} ${LEVELS[level] ?? level} ${String(msg ?? "")}${fields === "" ? "" : ` (${fields})`}\n`);
        } catch {
          out.write(`${text}\n`);
        }
      }
      done();
    },
  });
}

/** How a long-running command's log shows besides its file: `text` for people, `json` for a collector. */
export type LogFormat = "text" | "json";

/** Where the log lines that are not the file's go, and in which form. */
export type TerminalLog = "stderr-text" | "stderr-json" | "stdout-json";

/**
 * The choice behind {@link cliLogger}: with a `format` (`up --log-format`), readable warnings and
 * errors on stderr for `text` whatever stderr is (the JSON is in the file), every JSON line on
 * stdout for `json`; without one (the other long-running commands), JSON lines on stderr when
 * asked (`json`) or when stderr is not a terminal, readable lines when it is.
 */
export function terminalLog(o: { format?: LogFormat; json?: boolean; stderrIsTTY: boolean }): TerminalLog {
  if (o.format === "json") return "stdout-json";
  if (o.format === "text") return "stderr-text";
  return o.json === true || !o.stderrIsTTY ? "stderr-json" : "stderr-text";
}

/**
 * A logger for long-running commands, tokens redacted wherever they appear: JSON lines into
 * `file` when given, and on the terminal as {@link terminalLog} chooses.
 */
export function cliLogger(opts: { level?: string; file?: string; json?: boolean; format?: LogFormat } = {}): Logger {
  const level = opts.level ?? process.env["OPENFIEF_LOG_LEVEL"] ?? "info";
  const where = terminalLog({ ...(opts.format === undefined ? {} : { format: opts.format }), ...(opts.json === undefined ? {} : { json: opts.json }), stderrIsTTY: process.stderr.isTTY === true });
  const terminal = where === "stdout-json" ? pino.destination(1) : where === "stderr-json" ? pino.destination(2) : readableLines(process.stderr);
  const streams: pino.StreamEntry[] = [{ level: "trace", stream: terminal }];
  if (opts.file !== undefined) streams.push({ level: "trace", stream: pino.destination({ dest: opts.file, mkdir: true, sync: false }) });
  return pino({ level, base: null, redact: { paths: REDACT, censor: "[redacted]" } }, pino.multistream(streams));
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
