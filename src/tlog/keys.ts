/**
 * Key texts of signed-note. A verifier key is `<name>+<hex key ID>+base64(type ‖ public key)`; a
 * signer key is `PRIVATE+KEY+<name>+<hex key ID>+base64(type ‖ 32-byte seed)`. Both types this room
 * implements are Ed25519: 0x01 signs note texts, 0x04 makes cosignature/v1 cosignatures. A signer
 * key is a secret: no error here repeats it, and a signer object keeps its seed inside a key object.
 */
import { Buffer } from "node:buffer";
import { decodeBase64, encodeBase64 } from "./base64.js";
import { cosignatureVerifier, cosignerFromSeed } from "./cosignature.js";
import type { CosignatureSigner } from "./cosignature.js";
import { ED25519_PUBLIC_KEY_SIZE, ED25519_SEED_SIZE, ed25519FromSeed, ed25519Sign, ed25519Verifier } from "./ed25519.js";
import { fail, ok, TlogErrorCode } from "./errors.js";
import type { Result } from "./errors.js";
import { formatKeyId, isValidKeyName, KeyType, keyIdOf } from "./note.js";
import type { NoteSigner, NoteVerifier } from "./note.js";

/** An Ed25519 note signer (type 0x01), with what verifiers need. */
export interface Ed25519NoteSigner extends NoteSigner {
  readonly publicKey: Uint8Array;
  readonly verifier: NoteVerifier;
  /** `<name>+<key ID>+base64(0x01 ‖ public key)`. */
  readonly verifierKey: string;
}

const badName = (path: string) => fail(TlogErrorCode.InvalidKeyName, path, "a key name is non-empty, without spaces, plus signs or control characters");

/** The verifier key text of a public key of the given type. */
export function formatVerifierKey(name: string, type: KeyType, publicKey: Uint8Array): Result<string> {
  if (!isValidKeyName(name)) return badName("name");
  if (publicKey.length !== ED25519_PUBLIC_KEY_SIZE) return fail(TlogErrorCode.MalformedKey, "publicKey", "an Ed25519 public key is 32 bytes");
  return ok(`${name}+${formatKeyId(keyIdOf(name, type, publicKey))}+${encodeBase64(Buffer.concat([Buffer.from([type]), publicKey]))}`);
}

/** An Ed25519 verifier of note signatures (type 0x01). */
export function ed25519NoteVerifier(name: string, publicKey: Uint8Array): Result<NoteVerifier> {
  if (!isValidKeyName(name)) return badName("name");
  const verify = ed25519Verifier(publicKey);
  if (verify === null) return fail(TlogErrorCode.MalformedKey, "publicKey", "an Ed25519 public key is 32 bytes");
  return ok({ name, keyId: keyIdOf(name, KeyType.Ed25519, publicKey), type: KeyType.Ed25519, verify });
}

/** The Ed25519 note signer `name` with the key of `seed` (32 bytes the caller draws from a CSPRNG). */
export function noteSignerFromSeed(name: string, seed: Uint8Array): Result<Ed25519NoteSigner> {
  if (seed.length !== ED25519_SEED_SIZE) return fail(TlogErrorCode.MalformedKey, "privateKey", "an Ed25519 private key is 32 bytes");
  const key = ed25519FromSeed(seed);
  const verifier = ed25519NoteVerifier(name, key.publicKey);
  if (!verifier.ok) return verifier;
  const verifierKey = formatVerifierKey(name, KeyType.Ed25519, key.publicKey);
  if (!verifierKey.ok) return verifierKey;
  return ok({
    name,
    keyId: verifier.value.keyId,
    publicKey: key.publicKey,
    verifier: verifier.value,
    verifierKey: verifierKey.value,
    sign: (text) => ok(ed25519Sign(key, text)),
  });
}

interface KeyParts {
  readonly name: string;
  readonly keyId: number;
  readonly type: number;
  readonly key: Uint8Array;
}

/** `<name>+<8 hex digits>+<base64>`, or `null`. */
function keyParts(text: string): KeyParts | null {
  const a = text.indexOf("+");
  const b = a < 0 ? -1 : text.indexOf("+", a + 1);
  if (b < 0) return null;
  const name = text.slice(0, a);
  const hex = text.slice(a + 1, b);
  const raw = decodeBase64(text.slice(b + 1), "canonical");
  let hexOk = hex.length === 8;
  for (const c of hex) hexOk &&= (c >= "0" && c <= "9") || (c >= "a" && c <= "f");
  if (!hexOk || raw === null || raw.length < 2 || !isValidKeyName(name)) return null;
  return { name, keyId: Number.parseInt(hex, 16), type: raw[0] as number, key: raw.subarray(1) };
}

const malformedKey = (path: string, what: string) => fail(TlogErrorCode.MalformedKey, path, `a ${what} is ${path === "signerKey" ? "PRIVATE+KEY+" : ""}<name>+<8 lowercase hex digits>+<base64 of type and key>`);

/** Parses a verifier key of type 0x01 (note signatures) or 0x04 (cosignature/v1). */
export function parseVerifierKey(vkey: string): Result<NoteVerifier> {
  const parts = keyParts(vkey);
  if (parts === null) return malformedKey("verifierKey", "verifier key");
  const { name, keyId, type, key } = parts;
  if (type !== KeyType.Ed25519 && type !== KeyType.CosignatureV1) return fail(TlogErrorCode.UnknownKeyType, "verifierKey", `key type 0x${type.toString(16).padStart(2, "0")} is not implemented`);
  const verifier = type === KeyType.Ed25519 ? ed25519NoteVerifier(name, key) : cosignatureVerifier(name, key);
  if (!verifier.ok) return fail(verifier.error.code, "verifierKey", verifier.error.message);
  if (verifier.value.keyId !== keyId) return fail(TlogErrorCode.KeyIdMismatch, "verifierKey", `the key ID of ${name}'s key is ${formatKeyId(verifier.value.keyId)}, not ${formatKeyId(keyId)}`);
  return verifier;
}

/** The signer key text for `seed` (a secret: store it as one). */
export function formatSignerKey(name: string, type: KeyType, seed: Uint8Array): Result<string> {
  if (seed.length !== ED25519_SEED_SIZE) return fail(TlogErrorCode.MalformedKey, "privateKey", "an Ed25519 private key is 32 bytes");
  const vkey = formatVerifierKey(name, type, ed25519FromSeed(seed).publicKey);
  if (!vkey.ok) return vkey;
  const keyId = vkey.value.split("+")[1] as string;
  return ok(`PRIVATE+KEY+${name}+${keyId}+${encodeBase64(Buffer.concat([Buffer.from([type]), seed]))}`);
}

/** The parts of a signer key of `type`, its key ID checked against the key it holds. */
function signerParts(skey: string, type: KeyType): Result<{ name: string; seed: Uint8Array; keyId: number }> {
  const parts = skey.startsWith("PRIVATE+KEY+") ? keyParts(skey.slice("PRIVATE+KEY+".length)) : null;
  if (parts === null || parts.key.length !== ED25519_SEED_SIZE) return malformedKey("signerKey", "signer key");
  if (parts.type !== type) return fail(TlogErrorCode.UnknownKeyType, "signerKey", `a signer key of type 0x${type.toString(16).padStart(2, "0")} was expected`);
  return ok({ name: parts.name, seed: parts.key, keyId: parts.keyId });
}

const mismatch = () => fail(TlogErrorCode.KeyIdMismatch, "signerKey", "the signer key's key ID is not its key's");

/** Parses a note signer key of type 0x01. */
export function parseSignerKey(skey: string): Result<Ed25519NoteSigner> {
  const parts = signerParts(skey, KeyType.Ed25519);
  if (!parts.ok) return parts;
  const signer = noteSignerFromSeed(parts.value.name, parts.value.seed);
  if (!signer.ok) return signer;
  return signer.value.keyId === parts.value.keyId ? signer : mismatch();
}

/** Parses a cosigner key of type 0x04. */
export function parseCosignerKey(skey: string): Result<CosignatureSigner> {
  const parts = signerParts(skey, KeyType.CosignatureV1);
  if (!parts.ok) return parts;
  const signer = cosignerFromSeed(parts.value.name, parts.value.seed);
  if (!signer.ok) return signer;
  return signer.value.keyId === parts.value.keyId ? signer : mismatch();
}
