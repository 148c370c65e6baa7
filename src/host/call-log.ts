/**
 * One call's log lines as the host writes them: each line a JSON log record with the plugin, the
 * module digest and the stream beside the guest's text. The per-call budget counts the bytes
 * written, not the guest's characters: JSON escaping (up to six bytes for one character) and the
 * record's own fields (about 200 bytes a line) made a 64 KiB budget come to 193 KB of host log.
 * A line that would go past the budget, or past the line cap, is dropped whole and counted.
 */
import { hostname } from "node:os";
import type { Logger } from "pino";

/** The budget of one call's log. */
export interface CallLogBudget {
  /** The most bytes the call's lines may take in the host's log. */
  readonly bytes: number;
  /** The most lines. */
  readonly lines: number;
}

/**
 * The bytes pino adds to every record around the fields given: level, time, pid, hostname, the
 * logger's bindings, the newline. A 13-digit time and the level of `info`; the two objects' extra
 * pair of braces stands for the comma that joins them and the newline.
 */
function frameBytes(logger: Logger): number {
  return Buffer.byteLength(JSON.stringify({ level: 30, time: 1_000_000_000_000, pid: process.pid, hostname: hostname(), ...logger.bindings() }));
}

/** Writes one call's log lines within its budget. */
export class CallLog {
  readonly #logger: Logger;
  readonly #fields: Readonly<Record<string, string>>;
  readonly #frame: number;
  #bytesLeft: number;
  #linesLeft: number;
  /** Characters of the guest's text dropped (whole lines). */
  dropped = 0;

  constructor(logger: Logger, fields: Readonly<Record<string, string>>, budget: CallLogBudget) {
    this.#logger = logger;
    this.#fields = fields;
    this.#frame = frameBytes(logger);
    this.#bytesLeft = budget.bytes;
    this.#linesLeft = budget.lines;
  }

  /** Writes a line (already redacted and cut) unless it would go past the budget. */
  write(stream: "stdout" | "stderr", line: string): void {
    const record = { ...this.#fields, stream, msg: line };
    const bytes = this.#frame + Buffer.byteLength(JSON.stringify(record));
    if (this.#linesLeft <= 0 || bytes > this.#bytesLeft) {
      this.dropped += line.length;
      return;
    }
    this.#bytesLeft -= bytes;
    this.#linesLeft--;
    this.#logger.info({ ...this.#fields, stream }, line);
  }
}
