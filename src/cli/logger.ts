/**
 * The logger of long-running commands (`up`, `reconcile`, `call`): JSON lines, every field that
 * could hold a token redacted.
 */
import { Writable } from "node:stream";
import { pino } from "pino";
import type { Logger } from "pino";

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
 * `file` when given (its owner's only, like the data folder it is written in), and on the
 * terminal as {@link terminalLog} chooses.
 */
export function cliLogger(opts: { level?: string; file?: string; json?: boolean; format?: LogFormat } = {}): Logger {
  const level = opts.level ?? process.env["OPENFIEF_LOG_LEVEL"] ?? "info";
  const where = terminalLog({ ...(opts.format === undefined ? {} : { format: opts.format }), ...(opts.json === undefined ? {} : { json: opts.json }), stderrIsTTY: process.stderr.isTTY === true });
  const terminal = where === "stdout-json" ? pino.destination(1) : where === "stderr-json" ? pino.destination(2) : readableLines(process.stderr);
  const streams: pino.StreamEntry[] = [{ level: "trace", stream: terminal }];
  if (opts.file !== undefined) streams.push({ level: "trace", stream: pino.destination({ dest: opts.file, mkdir: true, sync: false, mode: 0o600 }) });
  return pino({ level, base: null, redact: { paths: REDACT, censor: "[redacted]" } }, pino.multistream(streams));
}
