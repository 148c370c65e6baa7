/**
 * RFC 6962 / RFC 9162 §2.1 hashing with SHA-256: a leaf is SHA-256(0x00 ‖ data), an interior node
 * SHA-256(0x01 ‖ left ‖ right), the empty tree SHA-256("").
 */
import { hash as digest } from "node:crypto";
import { Buffer } from "node:buffer";
import { decodeBase64, encodeBase64 } from "./base64.js";
import { fail, ok, TlogErrorCode } from "./errors.js";
import type { Result } from "./errors.js";

export const HASH_SIZE = 32;

declare const HashBrand: unique symbol;
/**
 * A 32-byte SHA-256 value. Only this room's functions make one ({@link hashFromBytes} checks the
 * length), so a `Hash` is always 32 bytes. Hashes are shared, never copied: do not write into one.
 */
export type Hash = Uint8Array & { readonly [HashBrand]: true };

const sha256 = (bytes: Uint8Array): Hash => digest("sha256", bytes, "buffer") as Uint8Array as Hash;

/** The hash of the empty tree: SHA-256 of the empty string. */
export const EMPTY_ROOT: Hash = sha256(new Uint8Array(0));

/** RFC 6962 leaf hash: SHA-256(0x00 ‖ data). */
export function leafHash(data: Uint8Array): Hash {
  const buf = Buffer.allocUnsafe(1 + data.length);
  buf[0] = 0x00;
  buf.set(data, 1);
  return sha256(buf);
}

// One scratch buffer for the 65 bytes of every interior node: hashing is synchronous.
const scratch = Buffer.alloc(1 + 2 * HASH_SIZE);
scratch[0] = 0x01;

/** RFC 6962 interior node hash: SHA-256(0x01 ‖ left ‖ right). */
export function nodeHash(left: Hash, right: Hash): Hash {
  scratch.set(left, 1);
  scratch.set(right, 1 + HASH_SIZE);
  return sha256(scratch);
}

/** A copy of `bytes` as a {@link Hash}, when it is 32 bytes long. */
export function hashFromBytes(bytes: Uint8Array, path = ""): Result<Hash> {
  if (bytes.length !== HASH_SIZE) return fail(TlogErrorCode.MalformedHash, path, `a hash is ${HASH_SIZE} bytes, not ${bytes.length}`);
  return ok(Uint8Array.from(bytes) as Hash);
}

/** A hash written in canonical standard base64 (44 characters). */
export function parseHash(text: string, path = ""): Result<Hash> {
  const bytes = text.length === 44 ? decodeBase64(text, "canonical") : null;
  if (bytes === null || bytes.length !== HASH_SIZE) return fail(TlogErrorCode.MalformedHash, path, "a hash is 32 bytes in canonical base64 (44 characters)");
  return ok(bytes as Hash);
}

export function formatHash(h: Hash): string {
  return encodeBase64(h);
}

export function hashEquals(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
