/**
 * Standard base64 (RFC 4648 §4) with padding, decoded strictly: Node's own decoder skips characters
 * outside the alphabet, so every character is checked here first.
 */
import { Buffer } from "node:buffer";

const VALID = new Uint8Array(128);
for (const c of "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/") VALID[c.charCodeAt(0)] = 1;
const PAD = 0x3d; // "="

/**
 * How strict the last character must be. `canonical`: the unused low bits of the last group must be
 * zero, so each byte string has exactly one text (hashes, keys, proofs). `padding-bits-ignored`: as
 * Go's `base64.StdEncoding`, which the reference signed-note code uses for signature lines (ADR 0130).
 */
export type Base64Mode = "canonical" | "padding-bits-ignored";

/** The bytes `text` encodes, or `null` when it is not standard padded base64. */
export function decodeBase64(text: string, mode: Base64Mode): Uint8Array | null {
  const n = text.length;
  if (n % 4 !== 0) return null;
  let pad = 0;
  if (n > 0 && text.charCodeAt(n - 1) === PAD) pad = text.charCodeAt(n - 2) === PAD ? 2 : 1;
  for (let i = 0; i < n - pad; i++) {
    const c = text.charCodeAt(i);
    if (c >= 128 || VALID[c] !== 1) return null;
  }
  const bytes = Buffer.from(text, "base64");
  if (mode === "canonical" && bytes.toString("base64") !== text) return null;
  return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

export function encodeBase64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64");
}
