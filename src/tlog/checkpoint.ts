/**
 * C2SP tlog-checkpoint: the note text `<origin>\n<size>\n<base64 root>\n` and optional non-empty
 * extension lines, parsed strictly (no leading zeros, a canonical 32-byte root, nothing empty).
 */
import { isIndex } from "./bits.js";
import { formatHash, parseHash } from "./hash.js";
import type { Hash } from "./hash.js";
import { fail, ok, TlogErrorCode } from "./errors.js";
import type { Result } from "./errors.js";
import { noteTextProblem, openNote, signNote, NOTE_CAPS } from "./note.js";
import type { NoteCaps, NoteSigner, NoteVerifier, OpenedNote } from "./note.js";

export interface Checkpoint {
  /** The log's identity, e.g. `example.com/log42`. */
  readonly origin: string;
  /** The number of leaves. */
  readonly size: number;
  /** The RFC 6962 root hash at that size. */
  readonly root: Hash;
  /** Opaque extension lines, each non-empty (not recommended; not auditable). */
  readonly extensions: readonly string[];
}

const bad = (path: string, why: string) => fail(TlogErrorCode.MalformedCheckpoint, path, why);

/** A tree size in decimal with no leading zeros (`0` for the empty tree), or `null`. */
export function parseDecimalSize(s: string): number | null {
  if (s.length === 0 || s.length > 16 || (s.length > 1 && s[0] === "0")) return null;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x30 || c > 0x39) return null;
  }
  const n = Number(s);
  return Number.isSafeInteger(n) ? n : null;
}

/** The checkpoint's note text. */
export function formatCheckpoint(c: Checkpoint): Result<string> {
  if (!isIndex(c.size)) return bad("checkpoint.size", "a tree size is an integer from 0 to 2^53 - 1");
  for (const [path, line] of [["checkpoint.origin", c.origin] as const, ...c.extensions.map((e, i) => [`checkpoint.extensions[${i}]`, e] as const)]) {
    if (line.length === 0 || line.includes("\n")) return bad(path, "a checkpoint line is non-empty and holds no newline");
  }
  const text = [c.origin, String(c.size), formatHash(c.root), ...c.extensions, ""].join("\n");
  const problem = noteTextProblem(text);
  return problem === null ? ok(text) : bad("checkpoint", problem);
}

/** Parses a checkpoint's note text, strictly. */
export function parseCheckpoint(text: string): Result<Checkpoint> {
  const problem = noteTextProblem(text);
  if (problem !== null) return bad("checkpoint", problem);
  const lines = text.slice(0, -1).split("\n");
  if (lines.length < 3) return bad("checkpoint", "a checkpoint has an origin, a size and a root hash line");
  const [origin, sizeText, rootText, ...extensions] = lines as [string, string, string, ...string[]];
  if (origin.length === 0) return bad("checkpoint.origin", "the origin line is not empty");
  const size = parseDecimalSize(sizeText);
  if (size === null) return bad("checkpoint.size", "the size is a decimal from 0 to 2^53 - 1 without leading zeros");
  const root = parseHash(rootText, "checkpoint.root");
  if (!root.ok) return root;
  const empty = extensions.findIndex((e) => e.length === 0);
  if (empty >= 0) return bad(`checkpoint.extensions[${empty}]`, "an extension line is not empty");
  return ok({ origin, size, root: root.value, extensions });
}

/** A checkpoint signed by the given keys (a log signs with its own; the key name should be the origin). */
export function signCheckpoint(c: Checkpoint, signers: readonly NoteSigner[]): Result<string> {
  const text = formatCheckpoint(c);
  return text.ok ? signNote(text.value, signers) : text;
}

/** Opens a signed checkpoint against the log's keys and parses its text. */
export function openCheckpoint(message: Uint8Array | string, verifiers: readonly NoteVerifier[], caps: NoteCaps = NOTE_CAPS): Result<{ checkpoint: Checkpoint; note: OpenedNote }> {
  const note = openNote(message, verifiers, caps);
  if (!note.ok) return note;
  const checkpoint = parseCheckpoint(note.value.text);
  return checkpoint.ok ? ok({ checkpoint: checkpoint.value, note: note.value }) : checkpoint;
}
