/**
 * C2SP tlog-proof (`c2sp.org/tlog-proof@v1`): an offline-verifiable proof that an entry is in a log,
 * as one text — the first line, an optional `extra <base64>` line, `index <N>`, the inclusion proof
 * one base64 hash a line, an empty line, then the signed checkpoint verbatim with its
 * cosignatures. This project puts the entry itself (the bytes whose leaf hash the tree holds) in
 * the `extra` line, so the file needs nothing else to be checked; any tlog-proof reader still
 * reads it, and the leaf hash binds the extra data to the signed root (ADR 0153).
 *
 * Parsing is strict and capped before anything is read; {@link verifyProof} returns every problem
 * it finds, one a line, rather than the first.
 */
import { Buffer, isUtf8 } from "node:buffer";
import { decodeBase64, encodeBase64 } from "./base64.js";
import { openCheckpoint, parseCheckpoint, parseDecimalSize } from "./checkpoint.js";
import type { Checkpoint } from "./checkpoint.js";
import { fail, ok, TlogErrorCode } from "./errors.js";
import type { Result, TlogError } from "./errors.js";
import { formatHash, leafHash, parseHash } from "./hash.js";
import type { Hash } from "./hash.js";
import { formatKeyId, KeyType, NOTE_CAPS } from "./note.js";
import type { NoteSignature, NoteVerifier } from "./note.js";
import { verifyInclusion } from "./proof.js";
import { MAX_ENTRY_SIZE } from "./tile.js";
import { MAX_PROOF_LINES } from "./witness.js";

/** The first line of a tlog-proof. */
export const PROOF_HEADER = "c2sp.org/tlog-proof@v1";

/**
 * The largest proof file: a checkpoint note at its cap, an entry at its cap in base64, 63 proof
 * lines and the header lines — refused before it is parsed (ADR 0153).
 */
export const MAX_PROOF_FILE_BYTES = NOTE_CAPS.maxBytes + 128 * 1024;

/** A tlog-proof, parsed (nothing in it verified yet). */
export interface ProofFile {
  /** The `extra` data: here, the entry whose leaf is proved; `null` when the line is absent. */
  readonly extra: Uint8Array | null;
  /** Zero-based leaf index. */
  readonly index: number;
  /** Hashes from the leaf's sibling up. */
  readonly proof: readonly Hash[];
  /** The signed checkpoint note with its cosignatures, verbatim. */
  readonly checkpoint: string;
}

const malformed = (path: string, why: string) => fail(TlogErrorCode.MalformedProofFile, path, `not a tlog-proof: ${why}`);

/** The proof file's text. */
export function formatProof(p: ProofFile): Result<string> {
  if (p.extra !== null && p.extra.length > MAX_ENTRY_SIZE) return fail(TlogErrorCode.EntryTooLarge, "proof.extra", `an entry is at most ${MAX_ENTRY_SIZE} bytes`);
  if (!Number.isSafeInteger(p.index) || p.index < 0) return fail(TlogErrorCode.InvalidArgument, "proof.index", "an index is an integer from 0 to 2^53 - 1");
  if (p.proof.length > MAX_PROOF_LINES) return fail(TlogErrorCode.InvalidArgument, "proof.proof", `a proof has at most ${MAX_PROOF_LINES} hashes`);
  const lines = [PROOF_HEADER];
  if (p.extra !== null) lines.push(`extra ${encodeBase64(p.extra)}`);
  lines.push(`index ${p.index}`, ...p.proof.map(formatHash), "");
  const text = `${lines.join("\n")}\n${p.checkpoint}`;
  return Buffer.byteLength(text, "utf8") > MAX_PROOF_FILE_BYTES ? fail(TlogErrorCode.ProofFileTooLarge, "proof", `a proof file is at most ${MAX_PROOF_FILE_BYTES} bytes`) : ok(text);
}

/** The `extra` line's bytes (its length capped before it is decoded); `null` when the line is absent. */
function parseExtra(line: string | undefined): Result<Uint8Array | null> {
  if (line?.startsWith("extra ") !== true) return ok(null);
  const b64 = line.slice("extra ".length);
  if (b64.length > Math.ceil(MAX_ENTRY_SIZE / 3) * 4) return fail(TlogErrorCode.EntryTooLarge, "proof.extra", `an entry is at most ${MAX_ENTRY_SIZE} bytes`);
  const extra = decodeBase64(b64, "canonical");
  return extra === null ? malformed("proof.extra", "the extra data is canonical standard base64") : ok(extra);
}

/** The inclusion proof's lines, at most {@link MAX_PROOF_LINES}. */
function parseProofLines(lines: readonly string[]): Result<Hash[]> {
  if (lines.length > MAX_PROOF_LINES) return malformed("proof.proof", `an inclusion proof has at most ${MAX_PROOF_LINES} hashes`);
  const proof: Hash[] = [];
  for (const [i, line] of lines.entries()) {
    const h = parseHash(line, `proof.proof[${i}]`);
    if (!h.ok) return h;
    proof.push(h.value);
  }
  return ok(proof);
}

/** The file's text split at its first empty line, after the size cap and the encoding check. */
function splitProof(input: Uint8Array | string): Result<{ head: string[]; checkpoint: string }> {
  const bytes = typeof input === "string" ? Buffer.from(input, "utf8") : Buffer.from(input.buffer, input.byteOffset, input.byteLength);
  if (bytes.length > MAX_PROOF_FILE_BYTES) return fail(TlogErrorCode.ProofFileTooLarge, "proof", `a proof file is at most ${MAX_PROOF_FILE_BYTES} bytes`);
  if (!isUtf8(bytes)) return malformed("proof", "the file is not UTF-8 text");
  const text = bytes.toString("utf8");
  const blank = text.indexOf("\n\n");
  if (blank < 0) return malformed("proof", "no empty line before the checkpoint");
  const checkpoint = text.slice(blank + 2);
  if (checkpoint.length === 0) return malformed("proof.checkpoint", "the signed checkpoint follows the empty line");
  return ok({ head: text.slice(0, blank).split("\n"), checkpoint });
}

/** Reads a tlog-proof strictly: its size capped first, then its lines in the specification's order. */
export function parseProof(input: Uint8Array | string): Result<ProofFile> {
  const parts = splitProof(input);
  if (!parts.ok) return parts;
  const { head, checkpoint } = parts.value;
  if (head[0] !== PROOF_HEADER) return malformed("proof.header", `the first line is ${PROOF_HEADER}`);
  const extra = parseExtra(head[1]);
  if (!extra.ok) return extra;
  const at = extra.value === null ? 1 : 2;
  const indexLine = head[at] ?? "";
  const index = indexLine.startsWith("index ") ? parseDecimalSize(indexLine.slice("index ".length)) : null;
  if (index === null) return malformed("proof.index", "an `index <N>` line follows, N in decimal without leading zeros");
  const proof = parseProofLines(head.slice(at + 1));
  return proof.ok ? ok({ extra: extra.value, index, proof: proof.value, checkpoint }) : proof;
}

/** A cosigner the verifier asked for, and whether its cosignature holds. */
export interface WitnessFinding {
  /** `<name>+<key ID>`. */
  readonly witness: string;
  readonly cosigned: boolean;
  /** The cosignature's time (seconds since the Epoch) when it holds. */
  readonly timestamp?: number;
}

/** What {@link verifyProof} found: the checkpoint and entry as read, and every problem. */
export interface ProofReport {
  /** True when the log's signature, the inclusion proof and every asked-for cosignature hold. */
  readonly ok: boolean;
  readonly problems: readonly TlogError[];
  /** The checkpoint as signed, once the log's signature holds. */
  readonly checkpoint: Checkpoint | null;
  readonly index: number;
  readonly entry: Uint8Array | null;
  readonly witnesses: readonly WitnessFinding[];
}

const keyLabel = (v: NoteVerifier) => `${v.name}+${formatKeyId(v.keyId)}`;

/** The timestamp of a verified cosignature line (the 8 bytes after the key ID). */
function cosignatureTime(sig: NoteSignature | undefined): number | undefined {
  const raw = sig === undefined ? null : decodeBase64(sig.base64, "padding-bits-ignored");
  if (raw === null || raw.length < 12) return undefined;
  return Number(Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength).readBigUInt64BE(4));
}

/** Checks one cosigner's signature on the checkpoint note alone, so each witness gets its own line. */
function checkWitness(note: string, w: NoteVerifier, problems: TlogError[]): WitnessFinding {
  const opened = openCheckpoint(note, [w]);
  if (opened.ok) return { witness: keyLabel(w), cosigned: true, ...(w.type === KeyType.CosignatureV1 ? { timestamp: cosignatureTime(opened.value.note.verified[0]) ?? 0 } : {}) };
  const why = opened.error.code === TlogErrorCode.NoVerifiedSignature ? `witness ${keyLabel(w)} did not cosign the checkpoint` : `witness ${keyLabel(w)}'s cosignature does not verify`;
  problems.push({ code: opened.error.code, path: `witnesses.${w.name}`, message: why });
  return { witness: keyLabel(w), cosigned: false };
}

/** Checks each witness's cosignature on a signed checkpoint; each one missing or bad is a problem. */
export function verifyWitnesses(note: string, witnesses: readonly NoteVerifier[], problems: TlogError[]): WitnessFinding[] {
  return witnesses.map((w) => checkWitness(note, w, problems));
}

/** The one line that says why the log's signature on a checkpoint does not hold. */
export function signatureProblem(e: TlogError, log: NoteVerifier): string {
  if (e.code === TlogErrorCode.NoVerifiedSignature) return `the checkpoint is not signed by the log's key ${keyLabel(log)}`;
  if (e.code === TlogErrorCode.InvalidSignature) return `the log's signature on the checkpoint does not verify (key ${keyLabel(log)})`;
  return `the checkpoint does not open: ${e.message}`;
}

/** The checkpoint a note's text says, its signatures unchecked; null when it does not parse. */
function unsignedCheckpoint(note: string): Checkpoint | null {
  const at = note.lastIndexOf("\n\n");
  if (at < 0) return null;
  const c = parseCheckpoint(note.slice(0, at + 1));
  return c.ok ? c.value : null;
}

/**
 * Checks a parsed proof offline against the log's key and the witnesses the caller requires: the
 * log signed the checkpoint, each witness cosigned it, the file carries the entry, and the entry's
 * leaf is at the index in the checkpointed tree. Every problem found is reported.
 */
export function verifyProof(p: ProofFile, log: NoteVerifier, witnesses: readonly NoteVerifier[] = []): ProofReport {
  const problems: TlogError[] = [];
  let checkpoint: Checkpoint | null = null;
  const opened = openCheckpoint(p.checkpoint, [log]);
  if (opened.ok) checkpoint = opened.value.checkpoint;
  else problems.push({ code: opened.error.code, path: "proof.checkpoint", message: signatureProblem(opened.error, log) });
  const found = verifyWitnesses(p.checkpoint, witnesses, problems);
  if (p.extra === null) problems.push({ code: TlogErrorCode.MalformedProofFile, path: "proof.extra", message: "the proof carries no entry (no extra line): there is nothing to check it against" });
  // The inclusion is checked against the checkpoint's text even when its signature fails, so that
  // each thing wrong with the file is its own line; a verdict needs both.
  const tree = checkpoint ?? unsignedCheckpoint(p.checkpoint);
  if (tree !== null && p.extra !== null) {
    const checkpoint = tree;
    if (p.index >= checkpoint.size) problems.push({ code: TlogErrorCode.InvalidProof, path: "proof.index", message: `entry ${p.index} is not in the checkpointed tree of ${checkpoint.size} entries` });
    else {
      const v = verifyInclusion(leafHash(p.extra), p.index, checkpoint.size, p.proof, checkpoint.root);
      if (!v.ok) problems.push({ code: v.error.code, path: "proof.proof", message: `the entry is not proved at index ${p.index} of the checkpoint: ${v.error.message}` });
    }
  }
  return { ok: problems.length === 0, problems, checkpoint, index: p.index, entry: p.extra, witnesses: found };
}
