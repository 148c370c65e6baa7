/**
 * C2SP tlog-cosignature, its Ed25519 type (`cosignature/v1`, signature type 0x04): a cosigner signs
 * `cosignature/v1\ntime <T>\n` followed by the whole checkpoint text, and its signature line holds the
 * 8-byte big-endian timestamp then the 64-byte Ed25519 signature. The key ID uses the type byte
 * 0x04, so the same key as a plain Ed25519 note key (0x01) has another ID.
 */
import { Buffer } from "node:buffer";
import { decodeBase64 } from "./base64.js";
import { parseCheckpoint } from "./checkpoint.js";
import { ED25519_PUBLIC_KEY_SIZE, ED25519_SIGNATURE_SIZE, ed25519FromSeed, ed25519Sign, ed25519Verifier } from "./ed25519.js";
import { fail, ok, TlogErrorCode } from "./errors.js";
import type { Result } from "./errors.js";
import { formatKeyId, isValidKeyName, KeyType, keyIdOf, noteSignature } from "./note.js";
import type { NoteSignature, NoteSigner, NoteVerifier } from "./note.js";
import { encodeBase64 } from "./base64.js";

export const COSIGNATURE_HEADER = "cosignature/v1";
/** Timestamp and signature: 8 + 64 bytes after the key ID. */
export const COSIGNATURE_SIZE = 8 + ED25519_SIGNATURE_SIZE;
const MAX_TIMESTAMP = 2n ** 63n - 1n;

/** The signed message: `cosignature/v1\ntime <T>\n` then the checkpoint text, final newline included. */
export function cosignatureMessage(checkpointText: string, timestamp: number | bigint): Uint8Array {
  return Buffer.from(`${COSIGNATURE_HEADER}\ntime ${BigInt(timestamp)}\n${checkpointText}`, "utf8");
}

/** The timestamp and signature a cosignature line carries. */
export interface Cosignature {
  /** Seconds since the Epoch (POSIX time). */
  readonly timestamp: number;
  readonly signature: Uint8Array;
}

/** Reads the timestamp and signature of a cosignature line (whatever key made it). */
export function parseCosignature(sig: NoteSignature): Result<Cosignature> {
  const raw = decodeBase64(sig.base64, "padding-bits-ignored");
  if (raw === null || raw.length !== 4 + COSIGNATURE_SIZE) return fail(TlogErrorCode.MalformedCosignature, "signature", `a cosignature/v1 line holds ${4 + COSIGNATURE_SIZE} bytes`);
  const timestamp = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength).readBigUInt64BE(4);
  if (timestamp > BigInt(Number.MAX_SAFE_INTEGER)) return fail(TlogErrorCode.MalformedCosignature, "signature", "a cosignature's time is at most 2^53 - 1 seconds");
  return ok({ timestamp: Number(timestamp), signature: raw.subarray(12) });
}

/** A verifier of cosignature/v1 signatures by the cosigner `name` with the Ed25519 `publicKey`. */
export function cosignatureVerifier(name: string, publicKey: Uint8Array): Result<NoteVerifier> {
  if (!isValidKeyName(name)) return fail(TlogErrorCode.InvalidKeyName, "name", "a key name is non-empty, without spaces or plus signs");
  const verify = ed25519Verifier(publicKey);
  if (verify === null) return fail(TlogErrorCode.MalformedKey, "publicKey", `an Ed25519 public key is ${ED25519_PUBLIC_KEY_SIZE} bytes`);
  return ok({
    name,
    keyId: keyIdOf(name, KeyType.CosignatureV1, publicKey),
    type: KeyType.CosignatureV1,
    verify(text, signature) {
      if (signature.length !== COSIGNATURE_SIZE) return false;
      const timestamp = Buffer.from(signature.buffer, signature.byteOffset, 8).readBigUInt64BE(0);
      if (timestamp > MAX_TIMESTAMP) return false;
      const message = Buffer.concat([Buffer.from(`${COSIGNATURE_HEADER}\ntime ${timestamp}\n`, "utf8"), text]);
      return verify(message, signature.subarray(8));
    },
  });
}

/** A witness's (or any cosigner's) signing key. It holds no seed a caller can read. */
export interface CosignatureSigner {
  readonly name: string;
  readonly keyId: number;
  readonly publicKey: Uint8Array;
  readonly verifier: NoteVerifier;
  /** `<name>+<key ID>+base64(0x04 ‖ public key)`: what a client configures to check this cosigner. */
  readonly verifierKey: string;
  /** The cosignature line of a checkpoint text at `timestamp` (seconds since the Epoch). */
  sign(checkpointText: string, timestamp: number): Result<NoteSignature>;
  /** A note signer that cosigns at `timestamp`, for {@link signNote}. */
  at(timestamp: number): NoteSigner;
}

/** The cosigner `name` with the Ed25519 key of `seed` (32 bytes the caller draws from a CSPRNG). */
export function cosignerFromSeed(name: string, seed: Uint8Array): Result<CosignatureSigner> {
  if (seed.length !== 32) return fail(TlogErrorCode.MalformedKey, "privateKey", "an Ed25519 private key is 32 bytes");
  const key = ed25519FromSeed(seed);
  const verifier = cosignatureVerifier(name, key.publicKey);
  if (!verifier.ok) return verifier;
  const keyId = verifier.value.keyId;
  const signBytes = (text: Uint8Array, timestamp: number): Result<Uint8Array> => {
    if (!Number.isSafeInteger(timestamp) || timestamp < 0) return fail(TlogErrorCode.InvalidArgument, "timestamp", "a cosignature's time is an integer from 0 to 2^53 - 1 seconds");
    const checkpoint = parseCheckpoint(Buffer.from(text).toString("utf8"));
    if (!checkpoint.ok) return checkpoint;
    const out = Buffer.allocUnsafe(COSIGNATURE_SIZE);
    out.writeBigUInt64BE(BigInt(timestamp), 0);
    out.set(ed25519Sign(key, Buffer.concat([Buffer.from(`${COSIGNATURE_HEADER}\ntime ${timestamp}\n`, "utf8"), text])), 8);
    return ok(new Uint8Array(out));
  };
  return ok({
    name,
    keyId,
    publicKey: key.publicKey,
    verifier: verifier.value,
    verifierKey: `${name}+${formatKeyId(keyId)}+${encodeBase64(Buffer.concat([Buffer.from([KeyType.CosignatureV1]), key.publicKey]))}`,
    sign(checkpointText, timestamp) {
      const sig = signBytes(Buffer.from(checkpointText, "utf8"), timestamp);
      return sig.ok ? ok(noteSignature(name, keyId, sig.value)) : sig;
    },
    at(timestamp) {
      return { name, keyId, sign: (text) => signBytes(text, timestamp) };
    },
  });
}
