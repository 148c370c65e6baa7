/** Ed25519 (RFC 8032) from raw 32-byte seeds and public keys, through node:crypto. */
import { createPrivateKey, createPublicKey, sign, verify } from "node:crypto";
import type { KeyObject } from "node:crypto";
import { Buffer } from "node:buffer";

export const ED25519_SEED_SIZE = 32;
export const ED25519_PUBLIC_KEY_SIZE = 32;
export const ED25519_SIGNATURE_SIZE = 64;

// DER prefixes of PKCS #8 and SPKI for Ed25519 (RFC 8410): the raw key follows.
const PKCS8_PREFIX = Buffer.from("302e020100300506032b657004220420", "hex");
const SPKI_PREFIX = Buffer.from("302a300506032b6570032100", "hex");

/** A private key held as a node:crypto key object (it prints no secret), with its public key. */
export interface Ed25519Key {
  readonly privateKey: KeyObject;
  readonly publicKey: Uint8Array;
}

export function ed25519FromSeed(seed: Uint8Array): Ed25519Key {
  if (seed.length !== ED25519_SEED_SIZE) throw new RangeError(`an Ed25519 private key is ${ED25519_SEED_SIZE} bytes`);
  const privateKey = createPrivateKey({ key: Buffer.concat([PKCS8_PREFIX, seed]), format: "der", type: "pkcs8" });
  const spki = createPublicKey(privateKey).export({ format: "der", type: "spki" });
  return { privateKey, publicKey: new Uint8Array(spki.subarray(SPKI_PREFIX.length)) };
}

export function ed25519Sign(key: Ed25519Key, message: Uint8Array): Uint8Array {
  return new Uint8Array(sign(null, message, key.privateKey));
}

/** A verify function for a raw public key, or `null` when node:crypto does not take it as one. */
export function ed25519Verifier(publicKey: Uint8Array): ((message: Uint8Array, signature: Uint8Array) => boolean) | null {
  if (publicKey.length !== ED25519_PUBLIC_KEY_SIZE) return null;
  let key: KeyObject;
  try {
    key = createPublicKey({ key: Buffer.concat([SPKI_PREFIX, publicKey]), format: "der", type: "spki" });
  } catch {
    return null;
  }
  return (message, signature) => {
    if (signature.length !== ED25519_SIGNATURE_SIZE) return false;
    try {
      return verify(null, message, key, signature);
    } catch {
      return false;
    }
  };
}
