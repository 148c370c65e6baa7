/**
 * What every command that reads or writes the log shares: the data folder (`--data`, else
 * `OPENFIEF_DATA`, else `.openfief` in the current folder), opening its store, printing, and the
 * logger of long-running commands. The store is SQLite in WAL mode, so commands work beside a
 * running `openfief up`.
 */
import { Writable } from "node:stream";
import type { Command } from "commander";
import { pino } from "pino";
import type { Logger } from "pino";
import { DEFAULT_DATA_DIR, openDataStore, requireLog } from "../app/index.js";
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

export function dataDir(o: DataOptions): string {
  return o.data ?? process.env["OPENFIEF_DATA"] ?? DEFAULT_DATA_DIR;
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

/** A warning about what a command did (it succeeded): on standard error, so the output stays what was asked for. */
export function warn(line: string): void {
  process.stderr.write(`warning: ${line}\n`);
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

/**
 * A logger for long-running commands, tokens redacted wherever they appear: JSON lines into
 * `file` when given, and on stderr JSON lines (`json`, or stderr is not a terminal) or readable
 * warnings and errors (a terminal).
 */
export function cliLogger(opts: { level?: string; file?: string; json?: boolean } = {}): Logger {
  const level = opts.level ?? process.env["OPENFIEF_LOG_LEVEL"] ?? "info";
  const json = opts.json === true || process.stderr.isTTY !== true;
  const streams: pino.StreamEntry[] = [{ level: "trace", stream: json ? pino.destination(2) : readableLines(process.stderr) }];
  if (opts.file !== undefined) streams.push({ level: "trace", stream: pino.destination({ dest: opts.file, mkdir: true, sync: false }) });
  return pino({ level, base: null, redact: { paths: REDACT, censor: "[redacted]" } }, pino.multistream(streams));
}

/** Formats a list of a table's rows with padded columns. */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (r: readonly string[]) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i] ?? 0))).join("  ").trimEnd();
  return [line(header), ...rows.map(line)].join("\n");
}
