/**
 * A log export: a run of consecutive entries with what proves them to be entries `[start, end)` of
 * a signed checkpoint's tree, checkable offline and in one pass (ADR 0154). Its text, line by line:
 *
 *     openfief.dev/tlog-export@v1
 *     start <index of the first entry>
 *     left <base64 hash>     the hashes of rightEdge(start): the perfect subtrees left of the run
 *     entry <base64 bytes>   each entry, in order
 *     proof <base64 hash>    the consistency proof from the tree of `end` entries to the checkpoint's
 *     (an empty line)
 *     <the signed checkpoint, verbatim, with its cosignatures>
 *
 * A reader resumes a tree at `start` from the `left` hashes, appends each entry's leaf, and so holds
 * the root of the tree of `end` entries; the consistency proof then ties that root to the signed
 * one. By the hash's collision resistance, no other entries at those places give that root, while
 * the reader keeps only O(log n) hashes whatever the export's length.
 */
import { Buffer } from "node:buffer";
import { decodeBase64, encodeBase64 } from "./base64.js";
import { openCheckpoint, parseCheckpoint, parseDecimalSize } from "./checkpoint.js";
import type { Checkpoint } from "./checkpoint.js";
import { fail, ok, TlogErrorCode } from "./errors.js";
import type { Result, TlogError } from "./errors.js";
import { formatHash, parseHash } from "./hash.js";
import type { Hash } from "./hash.js";
import { NOTE_CAPS } from "./note.js";
import type { NoteVerifier } from "./note.js";
import { verifyConsistency } from "./proof.js";
import { signatureProblem, verifyWitnesses } from "./proof-file.js";
import type { WitnessFinding } from "./proof-file.js";
import { MAX_ENTRY_SIZE } from "./tile.js";
import { MerkleTree, rightEdge } from "./tree.js";
import { MAX_PROOF_LINES } from "./witness.js";

/** The first line of an export. */
export const EXPORT_HEADER = "openfief.dev/tlog-export@v1";

/** The longest line before the checkpoint: an `entry` line of the largest entry (checked before it is decoded). */
export const MAX_EXPORT_LINE = "entry ".length + Math.ceil(MAX_ENTRY_SIZE / 3) * 4;

/** What an export says before its entries. */
export interface ExportHead {
  readonly start: number;
  readonly left: readonly Hash[];
}

/** The lines of an export's head: the header, `start`, and the `left` hashes. */
export function exportHeadLines(head: ExportHead): string[] {
  return [EXPORT_HEADER, `start ${head.start}`, ...head.left.map((h) => `left ${formatHash(h)}`)];
}

/** An `entry` line. */
export function exportEntryLine(entry: Uint8Array): Result<string> {
  if (entry.length > MAX_ENTRY_SIZE) return fail(TlogErrorCode.EntryTooLarge, "entry", `an entry is at most ${MAX_ENTRY_SIZE} bytes`);
  return ok(`entry ${encodeBase64(entry)}`);
}

/** The lines after the entries: the consistency proof, the empty line, the checkpoint (whose text ends in a newline). */
export function exportTail(proof: readonly Hash[], checkpointNote: string): string {
  return [...proof.map((h) => `proof ${formatHash(h)}`), "", checkpointNote].join("\n");
}

/** What checking an export found. */
export interface ExportReport {
  readonly ok: boolean;
  readonly problems: readonly TlogError[];
  readonly start: number;
  /** One past the last entry's index. */
  readonly end: number;
  readonly checkpoint: Checkpoint | null;
  readonly witnesses: readonly WitnessFinding[];
}

type Stage = "header" | "start" | "left" | "entries" | "proof" | "checkpoint";

const malformed = (path: string, why: string) => fail(TlogErrorCode.MalformedExport, path, `not a log export: ${why}`);

/**
 * Reads and checks an export line by line (each line without its newline), in one pass and
 * O(log n) memory. {@link line} answers each entry's bytes as it is read (unverified until
 * {@link finish}), and a failure for a line that breaks the format; {@link finish} verifies.
 */
export class ExportReader {
  #stage: Stage = "header";
  #lineNo = 0;
  #start = 0;
  readonly #left: Hash[] = [];
  #tree: MerkleTree | null = null;
  readonly #proof: Hash[] = [];
  readonly #note: string[] = [];
  #noteBytes = 0;

  constructor(private readonly log: NoteVerifier, private readonly witnesses: readonly NoteVerifier[] = []) {}

  /** Takes the next line; answers an entry's bytes for an `entry` line, `null` for any other. */
  line(text: string): Result<Uint8Array | null> {
    const path = `export.lines[${this.#lineNo++}]`;
    if (this.#stage === "checkpoint") return this.#noteLine(text, path);
    if (text.length > MAX_EXPORT_LINE) return malformed(path, `a line before the checkpoint is at most ${MAX_EXPORT_LINE} characters`);
    if (this.#stage === "header" || this.#stage === "start") return this.#headLine(text, path);
    return this.#bodyLine(text, path);
  }

  /** A line of the checkpoint note, the note's size capped as it grows. */
  #noteLine(text: string, path: string): Result<null> {
    this.#noteBytes += Buffer.byteLength(text, "utf8") + 1;
    if (this.#noteBytes > NOTE_CAPS.maxBytes) return fail(TlogErrorCode.NoteTooLarge, path, `the checkpoint is at most ${NOTE_CAPS.maxBytes} bytes`);
    this.#note.push(text);
    return ok(null);
  }

  /** The header line, then the `start` line. */
  #headLine(text: string, path: string): Result<null> {
    if (this.#stage === "header") {
      if (text !== EXPORT_HEADER) return malformed(path, `the first line is ${EXPORT_HEADER}`);
      this.#stage = "start";
      return ok(null);
    }
    const start = text.startsWith("start ") ? parseDecimalSize(text.slice(6)) : null;
    if (start === null) return malformed(path, "the second line is `start <N>`, N in decimal without leading zeros");
    this.#start = start;
    this.#stage = "left";
    return ok(null);
  }

  /** `left`, `entry` and `proof` lines in that order, then the empty line before the checkpoint. */
  #bodyLine(text: string, path: string): Result<Uint8Array | null> {
    const space = text.indexOf(" ");
    const word = space < 0 ? text : text.slice(0, space);
    const value = space < 0 ? "" : text.slice(space + 1);
    if (word === "left" && this.#stage === "left") return this.#hash(value, path, this.#left);
    if (word === "entry" && (this.#stage === "left" || this.#stage === "entries")) return this.#entry(value, path);
    if (word === "proof") return this.#proofLine(value, path);
    if (text === "") return this.#blank(path);
    return malformed(path, "expected `left`, `entry` or `proof` lines in that order, then an empty line and the checkpoint");
  }

  #proofLine(value: string, path: string): Result<null> {
    const opened = this.#openTree(path);
    if (!opened.ok) return opened;
    this.#stage = "proof";
    if (this.#proof.length === MAX_PROOF_LINES) return malformed(path, `a consistency proof has at most ${MAX_PROOF_LINES} hashes`);
    return this.#hash(value, path, this.#proof);
  }

  #blank(path: string): Result<null> {
    const opened = this.#openTree(path);
    if (!opened.ok) return opened;
    this.#stage = "checkpoint";
    return ok(null);
  }

  #hash(value: string, path: string, into: Hash[]): Result<null> {
    const h = parseHash(value, path);
    if (!h.ok) return h;
    into.push(h.value);
    return ok(null);
  }

  /** The tree at `start`, resumed from the `left` hashes (once). */
  #openTree(path: string): Result<null> {
    if (this.#tree !== null) return ok(null);
    const want = rightEdge(this.#start).length;
    if (this.#left.length !== want) return malformed(path, `an export from entry ${this.#start} has ${want} left hashes, not ${this.#left.length}`);
    const tree = MerkleTree.resume(this.#start, this.#left);
    if (!tree.ok) return tree;
    this.#tree = tree.value;
    return ok(null);
  }

  #entry(value: string, path: string): Result<Uint8Array> {
    const opened = this.#openTree(path);
    if (!opened.ok) return opened;
    this.#stage = "entries";
    const bytes = decodeBase64(value, "canonical");
    if (bytes === null) return malformed(path, "an entry is canonical standard base64");
    (this.#tree as MerkleTree).appendData(bytes);
    return ok(bytes);
  }

  /** After the last line: the log's signature, the witnesses' cosignatures and the consistency proof. */
  finish(): Result<ExportReport> {
    if (this.#stage !== "checkpoint" || this.#tree === null) return malformed("export", "the file ends before its checkpoint");
    // Lines come without their newlines; the note ends in one.
    const note = `${this.#note.join("\n")}\n`;
    const problems: TlogError[] = [];
    const opened = openCheckpoint(note, [this.log]);
    let checkpoint: Checkpoint | null = null;
    if (opened.ok) checkpoint = opened.value.checkpoint;
    else problems.push({ code: opened.error.code, path: "export.checkpoint", message: signatureProblem(opened.error, this.log) });
    const witnesses = verifyWitnesses(note, this.witnesses, problems);
    const at = note.lastIndexOf("\n\n");
    const unsigned = at < 0 ? null : parseCheckpoint(note.slice(0, at + 1));
    if (checkpoint === null && (unsigned === null || !unsigned.ok)) return malformed("export.checkpoint", "the checkpoint after the empty line is a signed note");
    const cp = checkpoint ?? (unsigned as { value: Checkpoint }).value;
    const end = this.#tree.size;
    if (end > cp.size) problems.push({ code: TlogErrorCode.InvalidProof, path: "export.entries", message: `the export runs to entry ${end - 1}, past the checkpoint's ${cp.size} entries` });
    else if (end === this.#start) problems.push({ code: TlogErrorCode.InvalidProof, path: "export.entries", message: "the export holds no entries: it proves nothing" });
    else {
      const v = verifyConsistency(end, cp.size, this.#tree.root(), cp.root, this.#proof);
      if (!v.ok) problems.push({ code: v.error.code, path: "export.proof", message: `the entries are not the checkpoint's entries ${this.#start} to ${end - 1}: ${v.error.message}` });
    }
    return ok({ ok: problems.length === 0, problems, start: this.#start, end, checkpoint, witnesses });
  }
}
