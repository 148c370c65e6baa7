/**
 * The logs a witness cosigns for, each `<origin> <verifier key>`: from `--log` values or a logs
 * file, one a line. The origin is the checkpoint's first line (it may hold inner spaces, as a
 * checkpoint's origin may), the key the log's Ed25519 note verifier key
 * (`<name>+<key ID>+<base64>`, which holds no space): the line splits at its last space. A log may
 * have several keys (one line each); the same key twice, or two keys with one name and key ID for
 * an origin, is refused, since a note could not then be opened. Parsing is strict: one bad line
 * refuses the whole file, naming its line.
 */
import { Buffer, isUtf8 } from "node:buffer";
import { KeyType, parseVerifierKey } from "../tlog/index.js";
import type { NoteVerifier } from "../tlog/index.js";
import { fail, ok, WitnessErrorCode } from "./errors.js";
import type { Result } from "./errors.js";

/** A log the witness cosigns for. */
export interface LogConfig {
  readonly origin: string;
  /** Its keys: a checkpoint needs a valid signature by one of them. */
  readonly verifiers: readonly NoteVerifier[];
  /** Their texts, as given (public keys). */
  readonly keys: readonly string[];
}

/** The largest logs file, checked before it is read; an origin's longest form. */
export const LOGS_CAPS = { maxFileBytes: 1024 * 1024, maxOriginBytes: 1024, maxLogs: 10_000 } as const;

/** One line's text and where it came from (`--log[0]`, `logs.txt:3`), for the error. */
export interface LogLine {
  readonly text: string;
  readonly where: string;
}

const bad = (where: string, why: string) => fail<never>(WitnessErrorCode.BadLog, where, `${where}: ${why}`);

function originProblem(origin: string): string | null {
  if (origin.length === 0) return "the origin is empty";
  if (origin.trim() !== origin) return "the origin starts or ends with a space";
  if (Buffer.byteLength(origin, "utf8") > LOGS_CAPS.maxOriginBytes) return `an origin is at most ${LOGS_CAPS.maxOriginBytes} bytes`;
  if (Buffer.from(origin, "utf8").toString("utf8") !== origin) return "the origin is not well-formed Unicode";
  for (const ch of origin) if ((ch.codePointAt(0) as number) < 0x20 || ch === "\u007f") return "the origin holds a control character";
  return null;
}

/** One `<origin> <verifier key>` line. */
export function parseLogLine(line: LogLine): Result<{ origin: string; key: string; verifier: NoteVerifier }> {
  const space = line.text.lastIndexOf(" ");
  if (space < 0) return bad(line.where, "expected `<origin> <verifier key>`, e.g. `example.com/log example.com/log+1a2b3c4d+AQ…`");
  const origin = line.text.slice(0, space);
  const key = line.text.slice(space + 1);
  const problem = originProblem(origin);
  if (problem !== null) return bad(line.where, problem);
  const verifier = parseVerifierKey(key);
  if (!verifier.ok) return bad(line.where, `the verifier key does not parse: ${verifier.error.message}`);
  if (verifier.value.type !== KeyType.Ed25519) return bad(line.where, "a log's key is an Ed25519 note key (type 0x01), not a cosigner's");
  return ok({ origin, key, verifier: verifier.value });
}

/** Every line's log, grouped by origin in the order first given; the first bad line refuses them all. */
export function collectLogs(lines: readonly LogLine[]): Result<readonly LogConfig[]> {
  const byOrigin = new Map<string, { verifiers: NoteVerifier[]; keys: string[] }>();
  for (const line of lines) {
    const parsed = parseLogLine(line);
    if (!parsed.ok) return parsed;
    const { origin, key, verifier } = parsed.value;
    const log = byOrigin.get(origin) ?? { verifiers: [], keys: [] };
    if (log.keys.includes(key)) return bad(line.where, `the key ${key} of ${JSON.stringify(origin)} is given twice`);
    if (log.verifiers.some((v) => v.name === verifier.name && v.keyId === verifier.keyId)) {
      return bad(line.where, `${JSON.stringify(origin)} already has a key named ${verifier.name} with this key ID`);
    }
    log.verifiers.push(verifier);
    log.keys.push(key);
    byOrigin.set(origin, log);
    if (byOrigin.size > LOGS_CAPS.maxLogs) return bad(line.where, `a witness cosigns for at most ${LOGS_CAPS.maxLogs} logs`);
  }
  return ok([...byOrigin].map(([origin, l]) => ({ origin, verifiers: l.verifiers, keys: l.keys })));
}

/**
 * The lines of a logs file: UTF-8, `\n`-separated, blank lines and lines starting with `#`
 * skipped; every other line is a log. `name` is how the file is named in errors.
 */
export function logsFileLines(bytes: Uint8Array, name: string): Result<readonly LogLine[]> {
  if (bytes.length > LOGS_CAPS.maxFileBytes) return fail(WitnessErrorCode.BadLogsFile, name, `${name}: a logs file is at most ${LOGS_CAPS.maxFileBytes} bytes`);
  if (!isUtf8(bytes)) return fail(WitnessErrorCode.BadLogsFile, name, `${name}: a logs file is UTF-8 text`);
  const lines: LogLine[] = [];
  Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
    .toString("utf8")
    .split("\n")
    .forEach((text, i) => {
      if (text.length > 0 && !text.startsWith("#")) lines.push({ text, where: `${name}:${i + 1}` });
    });
  return ok(lines);
}
