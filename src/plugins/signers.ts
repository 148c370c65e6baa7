/**
 * Trusted signers (D-45) and how a verified signature's identity is compared with one. The
 * signature library's own identity policy is an unanchored JavaScript regular expression, so a
 * prefix of a subject would pass it; here the issuer and subject are compared exactly, a pattern
 * is an RE2 pattern (linear time) that must match the WHOLE subject, and a key is compared by the
 * DER bytes of its one PEM block. A malformed identity matches nothing.
 */
import type { RE2JS } from "re2js";
import { CAPS } from "./caps.js";
import { ErrorCode, fieldError, join } from "./errors.js";
import { compileRe2 } from "./regex.js";
import { PatternEngineNotLoaded } from "./re2-engine.js";
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
 * identity (see {@link identityProblems}) or a malformed verified identity (not an object, a field
 * that is not a string, a subject or key over the caps) matches nothing. Never throws.
 */
export function identityMatches(signer: SignerIdentity, verified: VerifiedIdentity): boolean {
  return rememberedMatcher(signer)(verified);
}

/** Each signer identity's matcher, made once per identity object (a catalog is asked about once per entry and plugin). */
const matchers = new WeakMap<object, (verified: VerifiedIdentity) => boolean>();

function rememberedMatcher(signer: SignerIdentity): (verified: VerifiedIdentity) => boolean {
  if (typeof signer !== "object" || signer === null) return signerMatcher(signer);
  let m = matchers.get(signer);
  if (m === undefined) matchers.set(signer, (m = signerMatcher(signer)));
  return m;
}

/**
 * A matcher for one signer identity, checked and compiled once: what {@link identityMatches}
 * answers, for many verified identities at the cost of one pattern compile.
 */
export function signerMatcher(signer: SignerIdentity): (verified: VerifiedIdentity) => boolean {
  try {
    if (identityProblems(signer, "").length > 0) return never;
    if (isKeyIdentity(signer)) {
      const want = publicKeyDer(signer.publicKey);
      if (want === undefined) return never;
      return guarded((v) => {
        if (v.kind !== "key" || typeof v.publicKey !== "string" || v.publicKey.length > CAPS.publicKeyPem) return false;
        const got = publicKeyDer(v.publicKey);
        return got !== undefined && bytesEqual(want, got);
      });
    }
    const issuer = signer.issuer;
    const subjectOk = (subject: string): boolean => subject !== "" && subject.length <= CAPS.subject;
    const keyless = (v: VerifiedIdentity): v is Extract<VerifiedIdentity, { kind: "keyless" }> =>
      v.kind === "keyless" && typeof v.issuer === "string" && typeof v.subject === "string" && v.issuer === issuer && subjectOk(v.subject);
    if (isExactIdentity(signer)) {
      const subject = signer.subject;
      return guarded((v) => keyless(v) && v.subject === subject);
    }
    const pattern = compilePattern(signer.subjectPattern);
    if (pattern === undefined) return never;
    return guarded((v) => keyless(v) && pattern.matches(v.subject));
  } catch (e) {
    if (e instanceof PatternEngineNotLoaded) throw e;
    return never;
  }
}

const never = (): boolean => false;

/** Fails closed on anything that is not an object, or whose reading throws (a getter, a proxy). */
function guarded(match: (v: VerifiedIdentity) => boolean): (verified: VerifiedIdentity) => boolean {
  return (verified) => {
    try {
      return typeof verified === "object" && verified !== null && match(verified);
    } catch {
      return false;
    }
  };
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
  if (has("publicKey")) return keyProblems(id, has("issuer"), path);
  return [...issuerProblems(id.issuer, join(path, "issuer")), ...(has("subject") ? subjectProblems(id.subject, join(path, "subject")) : patternProblems(id.subjectPattern, join(path, "subjectPattern")))];
}

function keyProblems(id: Record<string, unknown>, hasIssuer: boolean, path: string): FieldError[] {
  const errors: FieldError[] = [];
  if (hasIssuer) errors.push(fieldError(ErrorCode.InvalidIdentity, join(path, "issuer"), "a key identity has no issuer"));
  const at = join(path, "publicKey");
  if (typeof id.publicKey === "string" && id.publicKey.length > CAPS.publicKeyPem) {
    errors.push(fieldError(ErrorCode.TooLarge, at, `a public key is at most ${CAPS.publicKeyPem} characters of PEM`));
  } else if (typeof id.publicKey !== "string" || publicKeyDer(id.publicKey) === undefined) {
    errors.push(fieldError(ErrorCode.InvalidIdentity, at, "must be exactly one PEM PUBLIC KEY block"));
  }
  return errors;
}

function issuerProblems(issuer: unknown, at: string): FieldError[] {
  if (typeof issuer === "string" && issuer.length > CAPS.issuer) return [fieldError(ErrorCode.TooLarge, at, `an issuer is at most ${CAPS.issuer} characters`)];
  if (!isHttpsUrl(issuer)) return [fieldError(ErrorCode.InvalidIdentity, at, "must be an https URL without credentials, query or fragment")];
  return [];
}

function subjectProblems(subject: unknown, at: string): FieldError[] {
  if (typeof subject === "string" && subject.length > CAPS.subject) return [fieldError(ErrorCode.TooLarge, at, `a subject is at most ${CAPS.subject} characters`)];
  if (typeof subject !== "string" || subject === "") return [fieldError(ErrorCode.InvalidIdentity, at, "must be a non-empty string")];
  return [];
}

function patternProblems(pattern: unknown, at: string): FieldError[] {
  const compiled = typeof pattern === "string" && pattern !== "" ? compileRe2(pattern) : undefined;
  if (compiled !== undefined && !compiled.ok && compiled.tooLarge) return [fieldError(ErrorCode.TooLarge, at, compiled.message)];
  if (compiled === undefined || !compiled.ok) return [fieldError(ErrorCode.InvalidIdentity, at, "must be a non-empty RE2 pattern that compiles")];
  return [];
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

/**
 * Compiles a non-empty RE2 pattern within the caps ({@link CAPS.patternLength} characters,
 * {@link CAPS.patternProgram} instructions), or undefined when it does not.
 */
export function compilePattern(pattern: string): RE2JS | undefined {
  if (typeof pattern !== "string" || pattern === "") return undefined;
  const compiled = compileRe2(pattern);
  return compiled.ok ? compiled.regex : undefined;
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
  // The same few keys are read again for every catalog entry and verdict: their answer is kept.
  if (derOfPem.has(pem)) return derOfPem.get(pem)?.slice();
  const der = readPublicKeyDer(pem);
  if (pem.length > 16_384) return der;
  if (derOfPem.size >= DER_KEPT) derOfPem.clear();
  derOfPem.set(pem, der);
  return der?.slice();
}

/** {@link publicKeyDer}'s answers for the PEM texts read lately. */
const derOfPem = new Map<string, Uint8Array | undefined>();
const DER_KEPT = 64;

function readPublicKeyDer(pem: string): Uint8Array | undefined {
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
/** Each ASCII code's base64 value, -1 for a character outside the alphabet. */
const B64_VALUES = (() => {
  const values = new Int8Array(128).fill(-1);
  for (let i = 0; i < B64.length; i++) values[B64.charCodeAt(i)] = i;
  return values;
})();

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
    const code = data.charCodeAt(i);
    const v = code < 128 ? (B64_VALUES[code] as number) : -1;
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
