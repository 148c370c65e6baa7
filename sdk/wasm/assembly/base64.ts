// Base64 with the standard alphabet and padding (RFC 4648 §4), as Node's Buffer writes it: how
// the host carries a file's bytes (contentBase64) and a body that is not UTF-8 (bodyBase64).
import { Result } from "./result";

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

function sextet(c: i32): i32 {
  if (c >= 0x41 && c <= 0x5a) return c - 0x41;
  if (c >= 0x61 && c <= 0x7a) return c - 0x61 + 26;
  if (c >= 0x30 && c <= 0x39) return c - 0x30 + 52;
  if (c == 0x2b) return 62;
  if (c == 0x2f) return 63;
  return -1;
}

/** The decoded length of `encodedLength` base64 characters, at most (before padding). */
export function decodedLengthAtMost(encodedLength: i32): i32 {
  return (encodedLength / 4) * 3;
}

/**
 * Decodes base64; refuses whitespace, another alphabet, a missing or misplaced `=`, and padding
 * bits that are not zero, so each byte string has exactly one accepted spelling.
 */
export function decodeBase64(s: string): Result<Uint8Array> {
  const n = s.length;
  if (n % 4 != 0) return Result.err<Uint8Array>("invalid_request", "base64 whose length is not a multiple of 4");
  let pad = 0;
  if (n > 0 && s.charCodeAt(n - 1) == 0x3d) pad++;
  if (n > 1 && s.charCodeAt(n - 2) == 0x3d) pad++;
  const out = new Uint8Array((n / 4) * 3 - pad);
  let o = 0;
  for (let i = 0; i < n; i += 4) {
    const last = i + 4 == n;
    const a = sextet(s.charCodeAt(i));
    const b = sextet(s.charCodeAt(i + 1));
    const c2 = s.charCodeAt(i + 2);
    const c3 = s.charCodeAt(i + 3);
    const c = last && pad == 2 && c2 == 0x3d ? 0 : sextet(c2);
    const d = last && pad >= 1 && c3 == 0x3d ? 0 : sextet(c3);
    if (a < 0 || b < 0 || c < 0 || d < 0) return Result.err<Uint8Array>("invalid_request", "a character outside base64 at " + i.toString());
    const v = (a << 18) | (b << 12) | (c << 6) | d;
    out[o++] = <u8>(v >> 16);
    if (last && pad == 2) {
      if ((v & 0xffff) != 0) return Result.err<Uint8Array>("invalid_request", "base64 with non-zero padding bits");
      break;
    }
    out[o++] = <u8>(v >> 8);
    if (last && pad == 1) {
      if ((v & 0xff) != 0) return Result.err<Uint8Array>("invalid_request", "base64 with non-zero padding bits");
      break;
    }
    out[o++] = <u8>v;
  }
  return Result.ok<Uint8Array>(out);
}

/** Encodes bytes as base64 with padding. */
export function encodeBase64(bytes: Uint8Array): string {
  const parts = new Array<string>(0);
  let chunk = "";
  const n = bytes.length;
  for (let i = 0; i < n; i += 3) {
    const b0 = <i32>bytes[i];
    const b1 = i + 1 < n ? <i32>bytes[i + 1] : 0;
    const b2 = i + 2 < n ? <i32>bytes[i + 2] : 0;
    const v = (b0 << 16) | (b1 << 8) | b2;
    chunk += ALPHABET.charAt((v >> 18) & 63) + ALPHABET.charAt((v >> 12) & 63);
    chunk += i + 1 < n ? ALPHABET.charAt((v >> 6) & 63) : "=";
    chunk += i + 2 < n ? ALPHABET.charAt(v & 63) : "=";
    if (chunk.length >= 4096) {
      parts.push(chunk);
      chunk = "";
    }
  }
  parts.push(chunk);
  return parts.join("");
}
