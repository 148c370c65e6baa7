/**
 * The witness's side of C2SP tlog-witness `add-checkpoint`, as pure functions: parse the request
 * body, then decide against what the witness last cosigned for the checkpoint's origin. The answer
 * carries the HTTP status, content type and body the specification defines, and on success the new
 * state to persist. No HTTP and no storage here: the server that wraps this must compare-and-set
 * the stored state on the request's old size (the race the specification describes), so that two
 * different roots are never cosigned for one size.
 */
import { Buffer, isUtf8 } from "node:buffer";
import { parseCheckpoint, parseDecimalSize } from "./checkpoint.js";
import type { Checkpoint } from "./checkpoint.js";
import type { CosignatureSigner } from "./cosignature.js";
import { EMPTY_ROOT, hashEquals, parseHash } from "./hash.js";
import type { Hash } from "./hash.js";
import { fail, ok, TlogErrorCode } from "./errors.js";
import type { Result, TlogError } from "./errors.js";
import { NOTE_CAPS, openNote, signatureLine } from "./note.js";
import type { NoteCaps, NoteSignature, NoteVerifier, OpenedNote } from "./note.js";
import { verifyConsistency } from "./proof.js";

/** A client sends at most 63 consistency proof lines (tlog-witness). */
export const MAX_PROOF_LINES = 63;

export interface WitnessCaps {
  /** The largest request body, refused before it is parsed. */
  readonly maxBodyBytes: number;
  readonly note: NoteCaps;
}
/** A checkpoint note at its cap, 63 proof lines and the old size line. */
export const WITNESS_CAPS: WitnessCaps = { maxBodyBytes: NOTE_CAPS.maxBytes + 4096, note: NOTE_CAPS };

export interface AddCheckpointRequest {
  readonly oldSize: number;
  readonly proof: readonly Hash[];
  /** The signed checkpoint, as sent. */
  readonly checkpoint: Uint8Array;
  /** Its first line, read before anything is verified, to find the log. */
  readonly origin: string;
}

/** What the witness knows of one log. */
export interface WitnessedLog {
  readonly origin: string;
  /** The log's keys: a checkpoint needs a valid signature by one of them. */
  readonly verifiers: readonly NoteVerifier[];
  /** The size of the latest checkpoint the witness cosigned, 0 if none. */
  readonly size: number;
  /** Its root hash ({@link EMPTY_ROOT} if none). */
  readonly root: Hash;
}

/** The state to persist after a cosignature, if the stored size is still the request's old size. */
export interface Cosigned {
  readonly origin: string;
  readonly size: number;
  readonly root: Hash;
  /** The checkpoint with the log's verified signatures and the witness's cosignatures: what monitors are served. */
  readonly checkpoint: string;
}

const TEXT = "text/plain; charset=utf-8";
export type AddCheckpointAnswer =
  | { readonly status: 200; readonly contentType: typeof TEXT; readonly body: string; readonly cosigned: Cosigned }
  | { readonly status: 409; readonly contentType: "text/x.tlog.size"; readonly body: string; readonly error: TlogError }
  | { readonly status: 400 | 403 | 404 | 422; readonly contentType: typeof TEXT; readonly body: string; readonly error: TlogError };

const refuse = (status: 400 | 403 | 404 | 422, error: TlogError): AddCheckpointAnswer => ({ status, contentType: TEXT, body: `${error.message}\n`, error });
const malformed = (path: string, why: string) => fail(TlogErrorCode.MalformedRequest, path, why);

/** The next `\n`-terminated line from `at`, or `null` when none ends. */
function lineAt(body: Buffer, at: number): { text: Buffer; next: number } | null {
  const end = body.indexOf(0x0a, at);
  return end < 0 ? null : { text: body.subarray(at, end), next: end + 1 };
}

/** The proof lines from `at` to the empty line, and where the checkpoint starts. */
function proofLines(buf: Buffer, at: number): Result<{ proof: Hash[]; next: number }> {
  const proof: Hash[] = [];
  for (;;) {
    const line = lineAt(buf, at);
    if (line === null) return malformed("request", "proof lines end with an empty line, before the checkpoint");
    at = line.next;
    if (line.text.length === 0) return ok({ proof, next: at });
    if (proof.length === MAX_PROOF_LINES) return malformed("request.proof", `at most ${MAX_PROOF_LINES} consistency proof lines`);
    const h = parseHash(line.text.toString("latin1"), `request.proof[${proof.length}]`);
    if (!h.ok) return malformed(h.error.path, "a proof line is one hash in canonical base64");
    proof.push(h.value);
  }
}

/** Parses an add-checkpoint body: `old <size>`, proof lines, an empty line, the signed checkpoint. */
export function parseAddCheckpointRequest(body: Uint8Array, caps: WitnessCaps = WITNESS_CAPS): Result<AddCheckpointRequest> {
  if (body.length > caps.maxBodyBytes) return fail(TlogErrorCode.RequestTooLarge, "request", `a request body is at most ${caps.maxBodyBytes} bytes`);
  const buf = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  const first = lineAt(buf, 0);
  const oldText = first?.text.toString("latin1") ?? "";
  const oldSize = oldText.startsWith("old ") ? parseDecimalSize(oldText.slice(4)) : null;
  if (first === null || oldSize === null) return malformed("request.old", "the first line is `old <size>`, the size in decimal without leading zeros");
  const lines = proofLines(buf, first.next);
  if (!lines.ok) return lines;
  const checkpoint = buf.subarray(lines.value.next);
  const originLine = lineAt(checkpoint, 0);
  if (originLine === null || originLine.text.length === 0 || !isUtf8(originLine.text)) return malformed("request.checkpoint", "a signed checkpoint follows the empty line");
  return ok({ oldSize, proof: lines.value.proof, checkpoint, origin: originLine.text.toString("utf8") });
}

/** The checkpoint's note and body when a trusted key of the log signed it; the refusal otherwise. */
function authenticate(request: AddCheckpointRequest, log: WitnessedLog, caps: NoteCaps): { note: OpenedNote; checkpoint: Checkpoint } | AddCheckpointAnswer {
  const note = openNote(request.checkpoint, log.verifiers, caps);
  if (!note.ok) {
    const { code } = note.error;
    if (code === TlogErrorCode.InvalidSignature || code === TlogErrorCode.NoVerifiedSignature || code === TlogErrorCode.AmbiguousKey) {
      return refuse(403, { ...note.error, code: TlogErrorCode.Unauthenticated, message: `checkpoint not signed by a trusted key of ${log.origin}: ${note.error.message}` });
    }
    return refuse(400, note.error);
  }
  const checkpoint = parseCheckpoint(note.value.text);
  if (!checkpoint.ok) return refuse(400, checkpoint.error);
  if (checkpoint.value.origin !== log.origin) return refuse(400, { code: TlogErrorCode.MalformedRequest, path: "checkpoint.origin", message: "the checkpoint is not of the log asked for" });
  return { note: note.value, checkpoint: checkpoint.value };
}

const inconsistent = (path: string, message: string) => refuse(422, { code: TlogErrorCode.Inconsistent, path, message });

/** The 422 a checkpoint deserves against the cosigned state, or `null` when it extends it. */
function consistency(request: AddCheckpointRequest, log: WitnessedLog, c: Checkpoint): AddCheckpointAnswer | null {
  if (c.size === 0 && !hashEquals(c.root, EMPTY_ROOT)) return inconsistent("checkpoint.root", "a checkpoint of size 0 has the root of the empty tree");
  if (request.oldSize === 0 && request.proof.length > 0) return inconsistent("request.proof", "from size 0 the consistency proof is empty");
  if (request.oldSize === c.size) {
    if (request.proof.length > 0) return inconsistent("request.proof", "between equal sizes the consistency proof is empty");
    return hashEquals(c.root, log.root) ? null : inconsistent("checkpoint.root", `a different root for size ${c.size}, which was cosigned with another root`);
  }
  if (request.oldSize === 0) return null;
  const proof = verifyConsistency(request.oldSize, c.size, log.root, c.root, request.proof);
  return proof.ok ? null : inconsistent("request.proof", `the consistency proof does not verify: ${proof.error.message}`);
}

export interface Witness {
  /** The witness's keys: each cosigns an accepted checkpoint. */
  readonly cosigners: readonly CosignatureSigner[];
  /** Now, in seconds since the Epoch: the cosignatures' time (never 0). */
  readonly now: number;
  readonly caps?: NoteCaps;
}

/**
 * The witness's decision on a parsed request, given what it knows of the checkpoint's log
 * (`undefined` when the origin is unknown). Checks run in the specification's order: unknown log
 * (404), signatures (403), old size above the checkpoint's (400), old size not the one last
 * cosigned (409, with that size), then consistency (422); else the checkpoint is cosigned.
 */
export function decideAddCheckpoint(request: AddCheckpointRequest, log: WitnessedLog | undefined, witness: Witness): AddCheckpointAnswer {
  if (witness.cosigners.length === 0) throw new RangeError("a witness has at least one cosigner key");
  if (!Number.isSafeInteger(witness.now) || witness.now <= 0) throw new RangeError("a cosignature's time is a positive number of seconds");
  if (log === undefined || log.origin !== request.origin) return refuse(404, { code: TlogErrorCode.UnknownLog, path: "checkpoint.origin", message: "unknown log" });
  const authenticated = authenticate(request, log, witness.caps ?? NOTE_CAPS);
  if ("status" in authenticated) return authenticated;
  const { note, checkpoint } = authenticated;
  if (request.oldSize > checkpoint.size) return refuse(400, { code: TlogErrorCode.MalformedRequest, path: "request.old", message: "the old size is larger than the checkpoint's" });
  if (request.oldSize !== log.size) {
    return { status: 409, contentType: "text/x.tlog.size", body: `${log.size}\n`, error: { code: TlogErrorCode.OldSizeMismatch, path: "request.old", message: `the latest cosigned size is ${log.size}` } };
  }
  const problem = consistency(request, log, checkpoint);
  if (problem !== null) return problem;
  const cosignatures: NoteSignature[] = [];
  for (const c of witness.cosigners) {
    const sig = c.sign(note.text, witness.now);
    if (!sig.ok) return refuse(400, sig.error);
    cosignatures.push(sig.value);
  }
  const body = cosignatures.map(signatureLine).join("");
  return {
    status: 200,
    contentType: TEXT,
    body,
    cosigned: { origin: log.origin, size: checkpoint.size, root: checkpoint.root, checkpoint: `${note.text}\n${note.verified.map(signatureLine).join("")}${body}` },
  };
}

/** Parses and decides in one call; `lookup` gives what the witness knows of an origin. */
export function addCheckpoint(body: Uint8Array, lookup: (origin: string) => WitnessedLog | undefined, witness: Witness & { readonly requestCaps?: WitnessCaps }): AddCheckpointAnswer {
  const request = parseAddCheckpointRequest(body, witness.requestCaps ?? WITNESS_CAPS);
  if (!request.ok) return refuse(400, request.error);
  return decideAddCheckpoint(request.value, lookup(request.value.origin), witness);
}
