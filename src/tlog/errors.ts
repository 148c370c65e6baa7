/**
 * Errors as values. Every problem this room finds in its input (a note, a checkpoint, a tile path,
 * a proof, a witness request) is a {@link TlogError}: a stable code, the path of the part it
 * concerns (`note.signatures[2]`, `checkpoint.size`) and a one-line message. Messages never quote a
 * signer key: a key text is a secret.
 */

/** Stable error codes. Never rename one: they are part of the interface. */
export const TlogErrorCode = {
  /** A hash that is not 32 bytes, or not canonical base64. */
  MalformedHash: "malformed_hash",
  /** A size or index out of range for the call (an index past the tree, a size beyond 2^53 - 1). */
  InvalidArgument: "invalid_argument",
  /** An inclusion or consistency proof that does not verify. */
  InvalidProof: "invalid_proof",
  /** A hash reader that answered something other than a 32-byte hash. */
  ReadFailed: "read_failed",
  MalformedTilePath: "malformed_tile_path",
  MalformedTile: "malformed_tile",
  MalformedEntryBundle: "malformed_entry_bundle",
  /** An entry longer than the 65,535 bytes its uint16 length prefix can say. */
  EntryTooLarge: "entry_too_large",
  /** A key name that is empty or holds a Unicode space or a plus sign. */
  InvalidKeyName: "invalid_key_name",
  /** A verifier or signer key text that does not parse. */
  MalformedKey: "malformed_key",
  /** A key whose signature type byte this room does not implement. */
  UnknownKeyType: "unknown_key_type",
  /** A key text whose key ID is not the one its name and public key give. */
  KeyIdMismatch: "key_id_mismatch",
  MalformedNote: "malformed_note",
  /** A note over its byte cap, refused before it is parsed. */
  NoteTooLarge: "note_too_large",
  /** A note with more signature lines than the cap, refused before they are parsed. */
  TooManySignatures: "too_many_signatures",
  /** Two known verifiers with the same key name and key ID. */
  AmbiguousKey: "ambiguous_key",
  /** A signature by a known key that does not verify: the whole note is refused. */
  InvalidSignature: "invalid_signature",
  /** A note with no signature from a known key. */
  NoVerifiedSignature: "no_verified_signature",
  MalformedCheckpoint: "malformed_checkpoint",
  MalformedCosignature: "malformed_cosignature",
  /** A witness request body that does not parse (HTTP 400). */
  MalformedRequest: "malformed_request",
  /** A witness request body over its byte cap (HTTP 400). */
  RequestTooLarge: "request_too_large",
  /** A checkpoint whose origin the witness does not know (HTTP 404). */
  UnknownLog: "unknown_log",
  /** A checkpoint signed by no trusted key of its log, or badly signed by one (HTTP 403). */
  Unauthenticated: "unauthenticated",
  /** The old size is not the size the witness last cosigned (HTTP 409). */
  OldSizeMismatch: "old_size_mismatch",
  /** A checkpoint that is not consistent with what the witness cosigned (HTTP 422). */
  Inconsistent: "inconsistent",
  /** A proof file (C2SP tlog-proof) that does not parse. */
  MalformedProofFile: "malformed_proof_file",
  /** A proof file over its byte cap, refused before it is parsed. */
  ProofFileTooLarge: "proof_file_too_large",
  /** A log export that does not parse, or a line of it over its cap. */
  MalformedExport: "malformed_export",
} as const;
export type TlogErrorCode = (typeof TlogErrorCode)[keyof typeof TlogErrorCode];

export interface TlogError {
  readonly code: TlogErrorCode;
  /** Where in the input: `checkpoint.size`, `note.signatures[2]`, `request.proof[1]`; `""` for the whole. */
  readonly path: string;
  readonly message: string;
}

export interface Success<T> {
  readonly ok: true;
  readonly value: T;
}
export interface Failure {
  readonly ok: false;
  readonly error: TlogError;
}
export type Result<T> = Success<T> | Failure;

export const ok = <T>(value: T): Success<T> => ({ ok: true, value });
export const fail = (code: TlogErrorCode, path: string, message: string): Failure => ({ ok: false, error: { code, path, message } });
