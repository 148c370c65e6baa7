/**
 * # The transparency-log formats (`src/tlog`)
 *
 * The formats and algorithms that let anyone check the decision log with any client of the
 * public specifications: the RFC 6962 / RFC 9162 Merkle tree, C2SP signed notes, checkpoints,
 * tiles and cosignatures, and the witness's side of C2SP tlog-witness. A library only: no
 * storage, no server, no clock and no randomness — sizes, times and key seeds are passed in, and
 * hashes are read through a reader the caller gives. It imports `node:crypto` and `node:buffer`
 * and no other room (a leaf of the house).
 *
 * Every problem in an input is a {@link TlogError} value with a stable {@link TlogErrorCode} and a
 * path; functions return a {@link Result}. Sizes and indexes are numbers up to 2^53 - 1, hashes
 * are 32-byte {@link Hash} values, and every cap (note bytes, signature lines, proof lines, request
 * body, tile path) is checked before the input is parsed. Choices the specifications leave open
 * are in docs/adr/0130-transparency-log-formats.md.
 *
 * What is where:
 * - **Hashing** — {@link leafHash}, {@link nodeHash}, {@link EMPTY_ROOT}; hashes as base64 text.
 * - **The tree** — {@link MerkleTree} appends a leaf in O(log n), gives the root at its size, and
 *   reports the nodes and tile hashes each append makes final, so a store writes as it goes;
 *   {@link MerkleTree.resume} restarts it from the right edge a store kept.
 * - **Proofs** — {@link proveInclusion} / {@link proveConsistency} / {@link rootAt} read O(log n)
 *   stored hashes through a {@link HashReader} (sync variants too; `plan*` name the nodes for a
 *   batched read); {@link verifyInclusion} / {@link verifyConsistency} follow RFC 9162 §2.1.3–2.1.4.
 * - **Tiles** — coordinates, the strict `tile/<L>/<N>[.p/<W>]` and `tile/entries/…` paths, which
 *   tiles a size has or needs published, hashes from tile bytes, a hash reader over tiles, and
 *   entry bundles.
 * - **Signed notes** — {@link openNote} / {@link signNote}; Ed25519 keys and the verifier and
 *   signer key texts ({@link parseVerifierKey}, {@link parseSignerKey}, …).
 * - **Checkpoints** — {@link formatCheckpoint} / {@link parseCheckpoint}, signed and opened.
 * - **Cosignatures** — cosignature/v1 (type 0x04): {@link cosignerFromSeed}, {@link parseCosignature}.
 * - **The witness** — {@link addCheckpoint}: an add-checkpoint body and the stored state in, the
 *   HTTP status, content type and body out, and on 200 the state to compare-and-set.
 */

/** Errors as values: codes, paths, results. */
export { TlogErrorCode, ok, fail } from "./errors.js";
export type { TlogError, Result, Success, Failure } from "./errors.js";

/** RFC 6962 hashing: leaf and node hashes, the empty tree's root, hashes as base64. */
export { HASH_SIZE, EMPTY_ROOT, leafHash, nodeHash, hashFromBytes, parseHash, formatHash, hashEquals } from "./hash.js";
export type { Hash } from "./hash.js";

/** The incremental tree kept by its right edge; node coordinates; the root of a list of leaves. */
export { MerkleTree, rangeNodes, rightEdge, foldRange, rootOf } from "./tree.js";
export type { NodeId, TreeNode, Appended } from "./tree.js";

/** Inclusion and consistency proofs from stored hashes, their plans, and their verification. */
export {
  planInclusion,
  planConsistency,
  planRoot,
  assemble,
  proveInclusion,
  proveInclusionSync,
  proveConsistency,
  proveConsistencySync,
  rootAt,
  rootAtSync,
  verifyInclusion,
  verifyConsistency,
} from "./proof.js";
export type { HashReader, SyncHashReader, ProofPlan } from "./proof.js";

/** C2SP tlog-tiles: tiles of height 8, their paths, bytes and hashes, and entry bundles. */
export {
  TILE_HEIGHT,
  TILE_WIDTH,
  MAX_TILE_LEVEL,
  MAX_ENTRY_SIZE,
  tileEntryFor,
  tileCoordinates,
  tileWidth,
  tilesToPublish,
  partialTiles,
  tilePath,
  entriesPath,
  parseTilePath,
  tileBytes,
  parseTile,
  hashFromTile,
  tileHashReader,
  encodeEntryBundle,
  decodeEntryBundle,
} from "./tile.js";
export type { TileId, BundleId, TileRef, TileEntry, TileCoordinates, TileReader } from "./tile.js";

/** C2SP signed-note: signature types, key names and IDs, signing and opening notes with caps. */
export { KeyType, NOTE_CAPS, isValidKeyName, keyIdOf, formatKeyId, noteSignature, signatureLine, openNote, signNote } from "./note.js";
export type { NoteSignature, NoteVerifier, NoteSigner, NoteCaps, OpenedNote } from "./note.js";

/** Key texts: `<name>+<id>+<key>` verifier keys and `PRIVATE+KEY+…` signer keys (secrets; never in an error). */
export { formatVerifierKey, parseVerifierKey, ed25519NoteVerifier, noteSignerFromSeed, formatSignerKey, parseSignerKey, parseCosignerKey } from "./keys.js";
export type { Ed25519NoteSigner } from "./keys.js";

/** C2SP tlog-checkpoint: the note text of a tree head, strictly parsed; signed and opened. */
export { formatCheckpoint, parseCheckpoint, parseDecimalSize, signCheckpoint, openCheckpoint } from "./checkpoint.js";
export type { Checkpoint } from "./checkpoint.js";

/** C2SP tlog-cosignature, Ed25519 cosignature/v1: the signed message, cosigners, verifiers. */
export { COSIGNATURE_HEADER, COSIGNATURE_SIZE, cosignatureMessage, parseCosignature, cosignatureVerifier, cosignerFromSeed } from "./cosignature.js";
export type { Cosignature, CosignatureSigner } from "./cosignature.js";

/** C2SP tlog-witness add-checkpoint: the request, the stored state, and the decision. */
export { MAX_PROOF_LINES, WITNESS_CAPS, parseAddCheckpointRequest, decideAddCheckpoint, addCheckpoint } from "./witness.js";
export type { WitnessCaps, AddCheckpointRequest, WitnessedLog, Cosigned, AddCheckpointAnswer, Witness } from "./witness.js";

/** C2SP tlog-proof files (the entry in the `extra` line) and their offline verification. */
export { PROOF_HEADER, MAX_PROOF_FILE_BYTES, formatProof, parseProof, verifyProof, verifyWitnesses, signatureProblem } from "./proof-file.js";
export type { ProofFile, ProofReport, WitnessFinding } from "./proof-file.js";

/** Log exports: a run of entries with what ties them to a signed checkpoint, read in one pass. */
export { EXPORT_HEADER, MAX_EXPORT_LINE, exportHeadLines, exportEntryLine, exportTail, ExportReader } from "./export-file.js";
export type { ExportHead, ExportReport } from "./export-file.js";
