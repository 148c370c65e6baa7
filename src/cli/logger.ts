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

/**
 * A logger for long-running commands, tokens redacted wherever they appear: JSON lines into
 * `file` when given, and on stderr JSON lines (`json`, or stderr is not a terminal) or readable
 * warnings and errors (a terminal).
 */
export function cliLogger(opts: { level?: string; file?: string; json?: boolean } = {}): Logger {
  const level = opts.level ?? process.env["OPENFIEF_LOG_LEVEL"] ?? "info";
  const json = opts.json === true || process.stderr.isTTY !== true;
  const streams: pino.StreamEntry[] = [{ level: "trace", stream: json ? pino.destination(2) : readableLines(process.stderr) }];
  // Its owner's only (0600), like the data folder it is written in.
  if (opts.file !== undefined) streams.push({ level: "trace", stream: pino.destination({ dest: opts.file, mkdir: true, sync: false, mode: 0o600 }) });
  return pino({ level, base: null, redact: { paths: REDACT, censor: "[redacted]" } }, pino.multistream(streams));
}
