/**
 * C2SP signed-note: a text ending in a newline, a blank line, then one or more signature lines
 * `— <key name> base64(key ID ‖ signature)`. A verifier opens a note against the keys it knows:
 * signatures by unknown keys are set aside, a known key's bad signature refuses the whole note, and
 * at least one known key must have signed. The note's size and its number of signature lines are
 * capped before anything in it is parsed.
 */
import { hash as digest } from "node:crypto";
import { Buffer, isUtf8 } from "node:buffer";
import { decodeBase64, encodeBase64 } from "./base64.js";
import { fail, ok, TlogErrorCode } from "./errors.js";
import type { Result } from "./errors.js";

/** Signature type bytes of signed-note (C2SP signed-note, "Signature types"). */
export const KeyType = {
  /** Ed25519 over the note text. */
  Ed25519: 0x01,
  /** Timestamped Ed25519 checkpoint cosignatures (C2SP tlog-cosignature). */
  CosignatureV1: 0x04,
} as const;
export type KeyType = (typeof KeyType)[keyof typeof KeyType];

/** One signature line of a note. `base64` is the line's text: the key ID then the signature. */
export interface NoteSignature {
  readonly name: string;
  readonly keyId: number;
  readonly base64: string;
}

/** Checks signatures by one key, named by its key name and key ID. */
export interface NoteVerifier {
  readonly name: string;
  readonly keyId: number;
  readonly type: KeyType;
  verify(text: Uint8Array, signature: Uint8Array): boolean;
}

/** Signs note texts with one key. */
export interface NoteSigner {
  readonly name: string;
  readonly keyId: number;
  sign(text: Uint8Array): Result<Uint8Array>;
}

export interface NoteCaps {
  /** The largest note, in bytes, refused before it is parsed. */
  readonly maxBytes: number;
  /** The most signature lines, counted before they are parsed (signed-note asks for at least 16). */
  readonly maxSignatures: number;
}

/**
 * Room for 100 signature lines (the Go reference's limit), post-quantum ones of about 3.3 kB
 * included, and a text of a few kilobytes (ADR 0130).
 */
export const NOTE_CAPS: NoteCaps = { maxBytes: 384 * 1024, maxSignatures: 100 };

export interface OpenedNote {
  /** The note text, final newline included. Trust it only for the keys in {@link verified}. */
  readonly text: string;
  /** Signatures by known keys, all verified (one per key). */
  readonly verified: readonly NoteSignature[];
  /** Signatures by keys not known to the caller, unchecked (identical lines once). */
  readonly unverified: readonly NoteSignature[];
}

const SPACES = new Set([0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x20, 0x85, 0xa0, 0x1680, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000]);
const isSpace = (cp: number) => SPACES.has(cp) || (cp >= 0x2000 && cp <= 0x200a);

/** Whether `s` is well-formed UTF-16, so that its UTF-8 is the same text. */
const wellFormed = (s: string) => Buffer.from(s, "utf8").toString("utf8") === s;

/**
 * A key name: non-empty, no Unicode space (as Go's `unicode.IsSpace`), no plus sign, and — so that
 * a note signed with it can be opened — no control character.
 */
export function isValidKeyName(name: string): boolean {
  if (name.length === 0 || !wellFormed(name)) return false;
  for (const ch of name) {
    const cp = ch.codePointAt(0) as number;
    if (cp < 0x20 || cp === 0x2b || isSpace(cp)) return false;
  }
  return true;
}

/** The recommended key ID: the first four bytes of SHA-256(name ‖ 0x0A ‖ type ‖ public key), big-endian. */
export function keyIdOf(name: string, type: number, publicKey: Uint8Array): number {
  const h = digest("sha256", Buffer.concat([Buffer.from(`${name}\n`, "utf8"), Buffer.from([type]), publicKey]), "buffer");
  return h.readUInt32BE(0);
}

export const formatKeyId = (keyId: number): string => keyId.toString(16).padStart(8, "0");

/** A signature line's value: base64 of the 4-byte key ID then the signature bytes. */
export function noteSignature(name: string, keyId: number, signature: Uint8Array): NoteSignature {
  const raw = Buffer.allocUnsafe(4 + signature.length);
  raw.writeUInt32BE(keyId, 0);
  raw.set(signature, 4);
  return { name, keyId, base64: encodeBase64(raw) };
}

/** `— <name> <base64>\n` */
export const signatureLine = (s: NoteSignature): string => `— ${s.name} ${s.base64}\n`;

const EM_DASH_SPACE = Buffer.from("— ", "utf8");
const NEWLINE = 0x0a;

/** Bytes of a note text that signed-note forbids: control characters other than newline. */
function hasControl(bytes: Uint8Array): boolean {
  for (const b of bytes) if (b < 0x20 && b !== NEWLINE) return true;
  return false;
}

/** Checks a text for signing: newline-terminated, well-formed, no control character but newlines. */
export function noteTextProblem(text: string): string | null {
  if (!text.endsWith("\n")) return "a note text ends in a newline";
  if (!wellFormed(text)) return "a note text is well-formed Unicode";
  if (hasControl(Buffer.from(text, "utf8"))) return "a note text holds no control character but newlines";
  return null;
}

interface ParsedLine {
  readonly line: string;
  readonly sig: NoteSignature;
  readonly bytes: Uint8Array;
}

/** One signature line (without its newline), or `null` when it is not one. */
function parseSignatureLine(line: Buffer): ParsedLine | null {
  if (line.length < EM_DASH_SPACE.length || !line.subarray(0, EM_DASH_SPACE.length).equals(EM_DASH_SPACE)) return null;
  const rest = line.subarray(EM_DASH_SPACE.length).toString("utf8");
  const space = rest.indexOf(" ");
  if (space < 0) return null;
  const name = rest.slice(0, space);
  const b64 = rest.slice(space + 1);
  // As the reference reader: a signature line's base64 may carry non-zero padding bits (ADR 0130).
  const raw = decodeBase64(b64, "padding-bits-ignored");
  if (raw === null || raw.length < 5 || !isValidKeyName(name)) return null;
  const keyId = Buffer.from(raw.buffer, raw.byteOffset, 4).readUInt32BE(0);
  return { line: rest, sig: { name, keyId, base64: b64 }, bytes: raw.subarray(4) };
}

/** Known verifiers by `name\nkeyId`. */
function index(verifiers: readonly NoteVerifier[]): Map<string, NoteVerifier[]> {
  const byKey = new Map<string, NoteVerifier[]>();
  for (const v of verifiers) {
    const k = `${v.name}\n${v.keyId}`;
    byKey.set(k, [...(byKey.get(k) ?? []), v]);
  }
  return byKey;
}

const malformed = (path: string, why: string) => fail(TlogErrorCode.MalformedNote, path, `malformed note: ${why}`);

/** Splits a note into text and signature block after the caps; checks encoding. */
function split(bytes: Buffer, caps: NoteCaps): Result<{ text: Buffer; sigs: Buffer }> {
  if (bytes.length > caps.maxBytes) return fail(TlogErrorCode.NoteTooLarge, "note", `a note is at most ${caps.maxBytes} bytes`);
  const at = bytes.lastIndexOf("\n\n");
  if (at < 0) return malformed("note", "no blank line before the signatures");
  let lines = 0;
  for (let i = at + 2; i < bytes.length; i++) if (bytes[i] === NEWLINE) lines++;
  if (lines > caps.maxSignatures) return fail(TlogErrorCode.TooManySignatures, "note.signatures", `a note has at most ${caps.maxSignatures} signature lines`);
  if (!isUtf8(bytes) || hasControl(bytes)) return malformed("note", "not UTF-8 without control characters");
  const sigs = bytes.subarray(at + 2);
  if (sigs.length === 0 || sigs[sigs.length - 1] !== NEWLINE) return malformed("note.signatures", "signature lines end in a newline");
  return ok({ text: bytes.subarray(0, at + 1), sigs });
}

/** What opening has gathered so far. */
interface Opening {
  readonly text: Buffer;
  readonly known: Map<string, NoteVerifier[]>;
  readonly verified: NoteSignature[];
  readonly unverified: NoteSignature[];
  readonly seenKeys: Set<string>;
  readonly seenLines: Set<string>;
}

/** Takes one signature line into `o`: set aside, verified, skipped as a repeat, or the note's refusal. */
function takeLine(o: Opening, line: Buffer, path: string): Result<undefined> {
  const parsed = parseSignatureLine(line);
  if (parsed === null) return malformed(path, "a signature line is `— <key name> <base64 of key ID and signature>`");
  const { sig } = parsed;
  const key = `${sig.name}\n${sig.keyId}`;
  const candidates = o.known.get(key);
  if (candidates === undefined) {
    if (!o.seenLines.has(parsed.line)) o.unverified.push(sig);
    o.seenLines.add(parsed.line);
    return ok(undefined);
  }
  if (candidates.length > 1) return fail(TlogErrorCode.AmbiguousKey, path, `more than one known key is ${sig.name}+${formatKeyId(sig.keyId)}`);
  if (o.seenKeys.has(key)) return ok(undefined);
  o.seenKeys.add(key);
  if (!(candidates[0] as NoteVerifier).verify(o.text, parsed.bytes)) {
    return fail(TlogErrorCode.InvalidSignature, path, `the signature of known key ${sig.name}+${formatKeyId(sig.keyId)} does not verify`);
  }
  o.verified.push(sig);
  return ok(undefined);
}

/** Opens a signed note against the verifiers the caller trusts; see the module comment. */
export function openNote(message: Uint8Array | string, verifiers: readonly NoteVerifier[], caps: NoteCaps = NOTE_CAPS): Result<OpenedNote> {
  if (typeof message === "string" && !wellFormed(message)) return malformed("note", "not well-formed Unicode");
  const bytes = typeof message === "string" ? Buffer.from(message, "utf8") : Buffer.from(message.buffer, message.byteOffset, message.byteLength);
  const parts = split(bytes, caps);
  if (!parts.ok) return parts;
  const { text, sigs } = parts.value;
  const o: Opening = { text, known: index(verifiers), verified: [], unverified: [], seenKeys: new Set(), seenLines: new Set() };
  for (let i = 0, start = 0; start < sigs.length; i++) {
    const end = sigs.indexOf(NEWLINE, start);
    const taken = takeLine(o, sigs.subarray(start, end), `note.signatures[${i}]`);
    if (!taken.ok) return taken;
    start = end + 1;
  }
  if (o.verified.length === 0) return fail(TlogErrorCode.NoVerifiedSignature, "note.signatures", "no known key signed the note");
  return ok({ text: text.toString("utf8"), verified: o.verified, unverified: o.unverified });
}

/**
 * Signs `text` with each signer and returns the signed note. Signatures in `keep` (from an opened
 * note) come first, but for those of a key that signs anew; then the new ones, in order.
 */
export function signNote(text: string, signers: readonly NoteSigner[], keep: readonly NoteSignature[] = []): Result<string> {
  const problem = noteTextProblem(text);
  if (problem !== null) return malformed("text", problem);
  const bytes = Buffer.from(text, "utf8");
  const signing = new Set(signers.map((s) => `${s.name}\n${s.keyId}`));
  const lines: string[] = [];
  for (const [i, s] of keep.entries()) {
    if (signing.has(`${s.name}\n${s.keyId}`)) continue;
    const raw = decodeBase64(s.base64, "padding-bits-ignored");
    if (!isValidKeyName(s.name) || raw === null || raw.length < 5 || Buffer.from(raw).readUInt32BE(0) !== s.keyId) {
      return malformed(`keep[${i}]`, "a kept signature's base64 starts with its key ID");
    }
    lines.push(signatureLine(s));
  }
  for (const [i, s] of signers.entries()) {
    if (!isValidKeyName(s.name)) return fail(TlogErrorCode.InvalidKeyName, `signers[${i}]`, "a key name is non-empty, without spaces or plus signs");
    const signature = s.sign(bytes);
    if (!signature.ok) return signature;
    lines.push(signatureLine(noteSignature(s.name, s.keyId, signature.value)));
  }
  if (lines.length === 0) return malformed("signers", "a signed note has at least one signature");
  return ok(`${text}\n${lines.join("")}`);
}
