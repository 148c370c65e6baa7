/**
 * Trusted signers (D-45) and how a verified signature's identity is compared with one. The
 * signature library's own identity policy is an unanchored JavaScript regular expression, so a
 * prefix of a subject would pass it; here the issuer and subject are compared exactly, a pattern
 * is an RE2 pattern (linear time) that must match the WHOLE subject, and a key is compared by the
 * DER bytes of its one PEM block. A malformed identity matches nothing.
 */
import { RE2JS } from "re2js";
import { ErrorCode, fieldError, join } from "./errors.js";
import type { FieldError } from "./errors.js";

/** D-45's three kinds of trusted signer. */
export type SignerKind = "openfief-ci" | "publisher" | "owner";

/** A keyless identity with an exact subject: an https OIDC issuer and the certificate's SAN. */
export interface ExactIdentity {
  readonly issuer: string;
  readonly subject: string;
}

/** A keyless identity whose subject is an RE2 pattern that must match the whole SAN. */
export interface PatternIdentity {
  readonly issuer: string;
  readonly subjectPattern: string;
}

/** A key identity: exactly one PEM `PUBLIC KEY` block. */
export interface KeyIdentity {
  readonly publicKey: string;
}

/** Who a trusted signer is. */
export type SignerIdentity = ExactIdentity | PatternIdentity | KeyIdentity;

/** A trusted signer: a name for people, its kind, and the identity its signatures must carry. */
export interface Signer {
  readonly name: string;
  readonly kind: SignerKind;
  readonly identity: SignerIdentity;
}

/** The identity of one signature that verified, as the signature adapter reports it. */
export type VerifiedIdentity =
  | { readonly kind: "keyless"; readonly issuer: string; readonly subject: string }
  | { readonly kind: "key"; readonly publicKey: string };

/** GitHub Actions' OIDC issuer. */
export const GITHUB_ACTIONS_ISSUER = "https://token.actions.githubusercontent.com";
/** The workflow that builds and signs OpenFief's images, on main. */
export const OPENFIEF_CI_SUBJECT =
  "https://github.com/arkadiuss/openfief/.github/workflows/images.yml@refs/heads/main";

/** OpenFief's CI, always trusted: the images.yml workflow on main, exact subject. */
export function openFiefCI(): Signer {
  return {
    name: "openfief-ci",
    kind: "openfief-ci",
    identity: { issuer: GITHUB_ACTIONS_ISSUER, subject: OPENFIEF_CI_SUBJECT },
  };
}

/** True for a keyless identity with an exact subject. */
export function isExactIdentity(identity: SignerIdentity): identity is ExactIdentity {
  return "subject" in identity;
}

/** True for a key identity. */
export function isKeyIdentity(identity: SignerIdentity): identity is KeyIdentity {
  return "publicKey" in identity;
}

/**
 * True when the verified identity is the signer's: issuer exactly equal and subject exactly
 * equal or wholly matched by the RE2 pattern; or the same DER public key. A malformed signer
 * identity (see {@link identityProblems}) or a malformed verified identity matches nothing.
 */
export function identityMatches(signer: SignerIdentity, verified: VerifiedIdentity): boolean {
  if (identityProblems(signer, "").length > 0) return false;
  if (isKeyIdentity(signer)) {
    if (verified.kind !== "key" || typeof verified.publicKey !== "string") return false;
    const want = publicKeyDer(signer.publicKey);
    const got = publicKeyDer(verified.publicKey);
    return want !== undefined && got !== undefined && bytesEqual(want, got);
  }
  if (verified.kind !== "keyless") return false;
  if (typeof verified.issuer !== "string" || typeof verified.subject !== "string") return false;
  if (verified.subject === "" || verified.issuer !== signer.issuer) return false;
  if (isExactIdentity(signer)) return verified.subject === signer.subject;
  const pattern = compilePattern(signer.subjectPattern);
  return pattern !== undefined && pattern.matches(verified.subject);
}

/**
 * Every problem with an identity, at `path`: exactly one of the three forms, an https issuer
 * without query or fragment, a non-empty subject, an RE2 pattern that compiles, or one PEM
 * `PUBLIC KEY` block holding a SubjectPublicKeyInfo.
 */
export function identityProblems(identity: SignerIdentity, path: string): FieldError[] {
  const id = identity as unknown as Record<string, unknown>;
  if (typeof id !== "object" || id === null) {
    return [fieldError(ErrorCode.InvalidIdentity, path, "an identity must be an object")];
  }
  const has = (k: string): boolean => Object.prototype.hasOwnProperty.call(id, k);
  const forms = ["subject", "subjectPattern", "publicKey"].filter(has);
  if (forms.length !== 1) {
    return [fieldError(ErrorCode.InvalidIdentity, path, "an identity has exactly one of subject, subjectPattern or publicKey")];
  }
  const errors: FieldError[] = [];
  if (has("publicKey")) {
    if (has("issuer")) {
      errors.push(fieldError(ErrorCode.InvalidIdentity, join(path, "issuer"), "a key identity has no issuer"));
    }
    if (typeof id.publicKey !== "string" || publicKeyDer(id.publicKey) === undefined) {
      errors.push(
        fieldError(ErrorCode.InvalidIdentity, join(path, "publicKey"), "must be exactly one PEM PUBLIC KEY block"),
      );
    }
    return errors;
  }
  if (!isHttpsUrl(id.issuer)) {
    errors.push(
      fieldError(ErrorCode.InvalidIdentity, join(path, "issuer"), "must be an https URL without credentials, query or fragment"),
    );
  }
  if (has("subject")) {
    if (typeof id.subject !== "string" || id.subject === "") {
      errors.push(fieldError(ErrorCode.InvalidIdentity, join(path, "subject"), "must be a non-empty string"));
    }
  } else if (typeof id.subjectPattern !== "string" || compilePattern(id.subjectPattern) === undefined) {
    errors.push(
      fieldError(ErrorCode.InvalidIdentity, join(path, "subjectPattern"), "must be a non-empty RE2 pattern that compiles"),
    );
  }
  return errors;
}

/** True for an absolute https URL with a host and no credentials, query, fragment or whitespace. */
export function isHttpsUrl(value: unknown): value is string {
  if (typeof value !== "string" || !value.startsWith("https://")) return false;
  // Control characters and spaces would be silently stripped or escaped by the URL parser.
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c <= 0x20 || c === 0x7f) return false;
  }
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return false;
  }
  return (
    url.protocol === "https:" &&
    url.hostname !== "" &&
    url.username === "" &&
    url.password === "" &&
    url.search === "" &&
    url.hash === "" &&
    !value.includes("?") &&
    !value.includes("#")
  );
}

/** Compiles a non-empty RE2 pattern, or undefined when it does not compile. */
export function compilePattern(pattern: string): RE2JS | undefined {
  if (pattern === "") return undefined;
  try {
    return RE2JS.compile(pattern);
  } catch {
    return undefined;
  }
}

const PEM_LINE = /^-----(BEGIN|END) ([A-Z0-9 ]+)-----$/;

/**
 * The DER bytes of the one PEM `PUBLIC KEY` block in `pem`, or undefined: no block, two blocks,
 * another label (a private key, a certificate), text outside the block, headers, base64 that is
 * not canonical, or bytes that are not a DER SubjectPublicKeyInfo. Line wrapping and whitespace
 * inside the block do not matter.
 */
export function publicKeyDer(pem: string): Uint8Array | undefined {
  if (typeof pem !== "string") return undefined;
  const lines = pem.split(/\r?\n/).map((l) => l.trim());
  let state: "before" | "inside" | "after" = "before";
  let body = "";
  for (const line of lines) {
    const boundary = PEM_LINE.exec(line);
    if (boundary !== null) {
      const [, which, label] = boundary;
      if (label !== "PUBLIC KEY") return undefined;
      if (which === "BEGIN" && state === "before") state = "inside";
      else if (which === "END" && state === "inside") state = "after";
      else return undefined;
      continue;
    }
    if (line.includes("-----")) return undefined;
    if (state === "inside") body += line.replace(/[ \t]/g, "");
    else if (line !== "") return undefined;
  }
  if (state !== "after") return undefined;
  const der = base64Decode(body);
  if (der === undefined || !isSubjectPublicKeyInfo(der)) return undefined;
  return der;
}

const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/** Strict standard base64: whole quartets, padding only at the end, unused bits zero. */
function base64Decode(text: string): Uint8Array | undefined {
  if (text.length === 0 || text.length % 4 !== 0) return undefined;
  const padding = text.endsWith("==") ? 2 : text.endsWith("=") ? 1 : 0;
  const data = text.slice(0, text.length - padding);
  const out = new Uint8Array((data.length * 6) >> 3);
  let bits = 0;
  let acc = 0;
  let o = 0;
  for (let i = 0; i < data.length; i++) {
    const v = B64.indexOf(data.charAt(i));
    if (v < 0) return undefined;
    acc = (acc << 6) | v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[o++] = (acc >> bits) & 0xff;
    }
    acc &= (1 << bits) - 1;
  }
  // Non-zero leftover bits mean two different texts would decode to the same key.
  if (acc !== 0) return undefined;
  return out;
}

/** Reads one DER TLV at `at`: its tag, where its content starts, and where it ends. */
function derElement(der: Uint8Array, at: number): { tag: number; start: number; end: number } | undefined {
  const tag = der[at];
  const first = der[at + 1];
  if (tag === undefined || first === undefined) return undefined;
  let start = at + 2;
  let length = first;
  if (first & 0x80) {
    const count = first & 0x7f;
    if (count === 0 || count > 3) return undefined;
    length = 0;
    for (let i = 0; i < count; i++) {
      const b = der[start + i];
      if (b === undefined) return undefined;
      length = length * 256 + b;
    }
    // DER uses the shortest length form.
    if (length < 0x80 || der[start] === 0) return undefined;
    start += count;
  }
  const end = start + length;
  if (end > der.length) return undefined;
  return { tag, start, end };
}

/** SEQUENCE { SEQUENCE algorithm, BIT STRING key } filling the whole input. */
function isSubjectPublicKeyInfo(der: Uint8Array): boolean {
  const outer = derElement(der, 0);
  if (outer === undefined || outer.tag !== 0x30 || outer.end !== der.length) return false;
  const algorithm = derElement(der, outer.start);
  if (algorithm === undefined || algorithm.tag !== 0x30) return false;
  const key = derElement(der, algorithm.end);
  return key !== undefined && key.tag === 0x03 && key.end === outer.end && key.end > key.start;
}

function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
