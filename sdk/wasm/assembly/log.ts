// Logging: one line per call on stdout (info) or stderr (warn, error). The host captures both,
// caps them per line and per call, and redacts every Secret the call was handed before a line
// reaches its log; a plugin should still never log one.
import { writeAll } from "./wasi";

function line(fd: u32, level: string, message: string): void {
  // One call, one line: a newline in the message would let it forge another line.
  let clean = message;
  if (clean.includes("\n") || clean.includes("\r")) clean = clean.replaceAll("\r", " ").replaceAll("\n", " ");
  const bytes = String.UTF8.encode(level + ": " + clean + "\n", false, String.UTF8.ErrorMode.REPLACE);
  writeAll(fd, changetype<usize>(bytes), <usize>bytes.byteLength);
}

export namespace log {
  /** Something worth knowing, on stdout. */
  export function info(message: string): void {
    line(1, "info", message);
  }

  /** Something that went wrong but did not stop the call, on stderr. */
  export function warn(message: string): void {
    line(2, "warn", message);
  }

  /** Something that stopped the call, on stderr. */
  export function error(message: string): void {
    line(2, "error", message);
  }
}
